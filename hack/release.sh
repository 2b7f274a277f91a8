#!/usr/bin/env bash
# release.sh tags every module of the repository at VERSION together: the library vX.Y.Z and
# each nested module DIR/vX.Y.Z (controllerruntime/vX.Y.Z, examples/prometheus/vX.Y.Z, ...), at
# one commit in which each nested module requires the library (and controllerruntime) at
# VERSION, with the go.sum lines of that version. So `go get MODULE@VERSION` of any of them
# needs no replace: what it requires of ours exists, at the same version.
#
# Usage: hack/release.sh VERSION      (VERSION: vX.Y.Z, or vX.Y.Z-PRERELEASE; major v0 or v1)
#
# It needs a clean working tree, makes one commit ("release VERSION") on the current branch and
# the tags, and pushes nothing: it prints the push command. The go.sum lines of our modules are
# made from the release commit itself, served by a file-based proxy (hack/cmd/modproxy): the
# hashes the public proxy will compute once the tags are pushed. Other dependencies come from
# the configured GOPROXY. hack/consumer-check.sh runs this script in a temporary clone and
# installs the result in a consumer module.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$repo_dir"

version=${1:-}
if ! [[ $version =~ ^v(0|1)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "usage: hack/release.sh vX.Y.Z (major v0 or v1: a v2 needs /v2 module paths)" >&2
	exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
	echo "release: the working tree is not clean; commit or remove:" >&2
	git status --short >&2
	exit 1
fi
for m in "${release_modules[@]}"; do
	if git rev-parse -q --verify "refs/tags/$(tag_name "$m" "$version")" >/dev/null; then
		echo "release: tag $(tag_name "$m" "$version") exists" >&2
		exit 1
	fi
done

log() { echo "release: $*" >&2; }

# 1. The nested modules require ours at VERSION.
for dir in "${release_modules[@]:1}"; do
	for m in "${release_modules[@]}"; do
		path=$(module_path "$m")
		if [ -n "$(required_version "$dir" "$path")" ]; then
			go mod edit -require="$path@$version" "$dir/go.mod"
		fi
	done
done
git add -- $(for dir in "${release_modules[@]:1}"; do echo "$dir/go.mod"; done)
git commit -q -m "release $version: the nested modules require the library at $version"

# 2. Their go.sum lines, from the release commit: the library first, then each nested module in
# order, served once its own go.sum is final (a module's zip holds its go.sum).
proxy=$(mktemp -d)
trap 'rm -rf "$proxy"' EXIT
modproxy -repo "$repo_dir" -rev HEAD -version "$version" -out "$proxy" .
for dir in "${release_modules[@]:1}"; do
	log "go mod tidy in $dir"
	(cd "$dir" && with_proxy "$proxy" go mod tidy)
	git add -- "$dir/go.mod" "$dir/go.sum"
	git commit -q --amend --no-edit
	modproxy -repo "$repo_dir" -rev HEAD -version "$version" -out "$proxy" "$dir"
done

# 3. The tags, all at the release commit.
commit=$(git rev-parse HEAD)
tags=()
for m in "${release_modules[@]}"; do
	tag=$(tag_name "$m" "$version")
	git tag -a -m "$(module_path "$m") $version" "$tag" "$commit"
	tags+=("$tag")
done
log "tagged ${tags[*]} at $(git rev-parse --short HEAD)"
log "publish with: git push origin HEAD ${tags[*]}"
