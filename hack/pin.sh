#!/usr/bin/env bash
# pin.sh points the nested modules (controllerruntime/, examples/*) at commit COMMIT (default
# HEAD) of this repository: each go.mod requires the library, and controllerruntime where it
# does, at COMMIT's pseudo-version, a version that exists once COMMIT is pushed. Then it tidies
# them (hack/tidy.sh). Between releases this keeps `go get MODULE@COMMIT` of a nested module
# able to build; a release pins them to its tag instead (hack/release.sh).
#
# Usage: hack/pin.sh [COMMIT]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$repo_dir"

commit=$(git rev-parse --verify "${1:-HEAD}^{commit}")
for dir in "${release_modules[@]:1}"; do
	for m in "${release_modules[@]}"; do
		path=$(module_path "$m")
		[ -n "$(required_version "$dir" "$path")" ] || continue
		v=$(modproxy -repo "$repo_dir" -rev "$commit" -pseudo "$m")
		go mod edit -require="$path@$v" "$dir/go.mod"
	done
done
"$hack_dir/tidy.sh"
