#!/usr/bin/env bash
# consumer-check.sh proves that the modules install as a user installs them. In a temporary
# clone of the repository (its committed HEAD) it makes a release with hack/release.sh, serves
# the release's tags from a file-based module proxy (GOPROXY=file://...), and in a fresh module
# outside the repository builds a program that imports the library and one that imports
# typedcache, with `go get MODULE@VERSION` only: no replace, no go.work. Dependencies other than
# ours come from the configured GOPROXY (the module cache, when it has them). It also installs
# the examples' programs with `go install PKG@VERSION`, which refuses any replace, and checks
# the README's replace lines for a checkout.
#
# Usage: hack/consumer-check.sh [VERSION]   (default: a prerelease made unique by the time)
#
# Versions it downloads (ours, served only by its proxy) are removed from the module cache at
# the end, so that a later run never builds a stale copy of the same version.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

version=${1:-v0.0.1-check.$(date -u +%Y%m%d%H%M%S)}
work=$(mktemp -d)
modcache=$(go env GOMODCACHE)
cleanup() {
	rm -rf "$work"
	# Our modules at the check's version only: the module cache's other entries stay.
	local d
	for d in "$modcache/github.com/typedkube" "$modcache/cache/download/github.com/typedkube"; do
		[ -d "$d" ] || continue
		find "$d" -depth \( -name "*@$version" -o -name "$version.*" \) -exec chmod -R u+w {} + -exec rm -rf {} + 2>/dev/null || true
	done
}
trap cleanup EXIT
log() { printf '== consumer-check: %s (%ds)\n' "$*" "$SECONDS" >&2; }

log "the nested modules require ours at versions that exist, with no replace"
for dir in "${release_modules[@]:1}"; do
	if grep -q '^replace\|^[[:space:]]*github.com/typedkube/informer[^ ]* =>' "$repo_dir/$dir/go.mod"; then
		echo "consumer-check: $dir/go.mod has a replace (Go ignores it in a dependency; local development goes through a go.work)" >&2
		exit 1
	fi
	for m in "${release_modules[@]}"; do
		v=$(required_version "$repo_dir/$dir" "$(module_path "$m")")
		if [ "$v" = v0.0.0 ]; then
			echo "consumer-check: $dir/go.mod requires $(module_path "$m") v0.0.0, a version that does not exist (hack/pin.sh)" >&2
			exit 1
		fi
	done
done

if [ -n "$(git -C "$repo_dir" status --porcelain)" ]; then
	log "note: uncommitted changes are not part of the check (it clones HEAD)"
fi
log "clone HEAD and release $version"
git clone -q --no-local "$repo_dir" "$work/repo"
git -C "$work/repo" config user.name consumer-check
git -C "$work/repo" config user.email consumer-check@localhost
"$work/repo/hack/release.sh" "$version"

log "serve the release's tags from a file proxy"
proxy=$work/proxy
for m in "${release_modules[@]}"; do
	modproxy -repo "$work/repo" -rev "$(tag_name "$m" "$version")" -version "$version" -out "$proxy" "$m"
done

# The consumer: a program on the library (the README's first controller, as the README shows
# it) and one on typedcache (the README's controller-runtime line).
consumer=$work/consumer
mkdir -p "$consumer/informer" "$consumer/typedcache"
cp "$hack_dir/testdata/consumer/informer/main.go" "$consumer/informer/"
cp "$hack_dir/testdata/consumer/typedcache/main.go" "$consumer/typedcache/"
cd "$consumer"
go mod init example.com/consumer >/dev/null 2>&1

log "go get the library and typedcache at $version, and build"
with_proxy "$proxy" go get "$root_module@$version" "$root_module/controllerruntime@$version"
with_proxy "$proxy" go build -o /dev/null ./...
with_proxy "$proxy" go vet ./...
if grep -q '^replace\|=>' go.mod; then
	echo "consumer-check: the consumer's go.mod has a replace:" >&2
	cat go.mod >&2
	exit 1
fi
grep "typedkube" go.mod >&2

log "go install the examples' programs at $version"
for pkg in examples/controller examples/manager/cmd examples/sharded; do
	with_proxy "$proxy" env GOBIN="$work/bin" go install "$root_module/$pkg@$version"
done
with_proxy "$proxy" go get "$root_module/examples/prometheus@$version"
with_proxy "$proxy" go build -o /dev/null "$root_module/examples/prometheus"

log "the README's replace lines, over the clone as a checkout"
checkout=$work/checkout
mkdir -p "$checkout/informer" "$checkout/typedcache"
cp "$consumer/informer/main.go" "$checkout/informer/"
cp "$consumer/typedcache/main.go" "$checkout/typedcache/"
cd "$checkout"
go mod init example.com/checkout >/dev/null 2>&1
# As the README says (with the clone's path for ../informer):
go mod edit -replace "$root_module=$work/repo" -replace "$root_module/controllerruntime=$work/repo/controllerruntime"
GOWORK=off GONOSUMDB=$root_module go mod tidy
GOWORK=off go build -o /dev/null ./...
log "done"
