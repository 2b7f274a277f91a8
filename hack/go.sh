#!/usr/bin/env bash
# go.sh runs a go command in a nested module (controllerruntime/, examples/*) outside its go.work,
# with the versions of our modules its go.mod requires served from the repository's own history:
# what `go get` and `go mod tidy` need, since the public proxy has those versions only once they
# are pushed. Every other module comes from the configured GOPROXY.
#
# Usage: hack/go.sh DIR go ARGS...      e.g. hack/go.sh controllerruntime go get sigs.k8s.io/yaml@v1.6.0
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ $# -lt 2 ]; then
	echo "usage: hack/go.sh DIR go ARGS..." >&2
	exit 2
fi
dir=$1
shift
cd "$repo_dir"
proxy=$(mktemp -d)
trap 'rm -rf "$proxy"' EXIT
serve_required "$proxy" "$dir"
cd "$dir"
with_proxy "$proxy" "$@"
