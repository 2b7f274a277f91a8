#!/usr/bin/env bash
# tidy.sh runs `go mod tidy` in the modules that require the library (controllerruntime/,
# examples/*), or in the ones given. Plain `go mod tidy` cannot: it ignores go.work and would
# fetch the version of the library these go.mod files require from the public proxy, which does
# not have it before it is pushed. This serves that version (a commit's pseudo-version or a
# release tag) from the repository's own history through a file proxy, and tidies with it.
#
# Usage: hack/tidy.sh [MODULE_DIR...]     (from anywhere; directories relative to the root)
#
# To make a nested module use newer code of the library, point its require at a commit that has
# it (hack/pin.sh COMMIT), or simply work in the module's go.work (controllerruntime/go.work,
# examples/go.work), which uses the checkout whatever the require says.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$repo_dir"

dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
	dirs=("${release_modules[@]:1}")
fi
proxy=$(mktemp -d)
trap 'rm -rf "$proxy"' EXIT
serve_required "$proxy" "${dirs[@]}"
for dir in "${dirs[@]}"; do
	echo "tidy: $dir" >&2
	(cd "$dir" && with_proxy "$proxy" go mod tidy)
done
