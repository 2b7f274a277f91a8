#!/usr/bin/env bash
# build-servers.sh builds the real servers the e2e tests run as child processes:
#
#   e2e/.bin/kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver v1.37.1 (staging modules v0.37.2)
#   e2e/.bin/etcd             go.etcd.io/etcd/server/v3 v3.7.0
#
# The versions are pinned by e2e/tools/go.mod; the binaries are built from that module because
# `go install pkg@version` refuses modules whose go.mod has replace directives.
#
# Usage: bash e2e/hack/build-servers.sh [--force]
#
# A stamp (a hash of e2e/tools/go.mod, go.sum, this script and the Go version) makes an up-to-date
# run return at once without calling the go command. A run that does build relies on the Go build
# cache: cold it takes 5-9 minutes on 2 cores (the kube-apiserver link peaks near 2.9 GB of memory),
# warm a few seconds. Concurrent runs (for example several test packages that find the binaries
# missing) are serialised with flock(1).
#
# Environment:
#   E2E_BIN_DIR   output directory (default: e2e/.bin next to this script)
set -euo pipefail

force=false
case "${1:-}" in
"") ;;
--force) force=true ;;
*)
	echo "usage: $0 [--force]" >&2
	exit 2
	;;
esac

e2e_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir=$e2e_dir/tools
bin_dir=${E2E_BIN_DIR:-$e2e_dir/.bin}
go_cmd=${GO:-go}
k8s_version=v1.37.1

log() { echo "build-servers: $*" >&2; }

mkdir -p "$bin_dir"

# Serialise concurrent builds; the second one finds the stamp written by the first.
exec 9>"$bin_dir/.build.lock"
if ! flock -n 9; then
	log "another build is running; waiting for it (lock $bin_dir/.build.lock)"
	flock 9
fi

stamp_file=$bin_dir/.stamp
want_stamp=$(
	{
		cat "$tools_dir/go.mod" "$tools_dir/go.sum" "${BASH_SOURCE[0]}"
		"$go_cmd" env GOVERSION GOOS GOARCH
	} | sha256sum | cut -d' ' -f1
)
if ! $force && [[ -x $bin_dir/kube-apiserver && -x $bin_dir/etcd && -f $stamp_file ]] &&
	[[ $(<"$stamp_file") == "$want_stamp" ]]; then
	log "up to date: $bin_dir/{kube-apiserver,etcd}"
	exit 0
fi

packages=(k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3)
ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=37"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

work_dir=$(mktemp -d "$bin_dir/.build.XXXXXX")
build_log=$work_dir/build.log
ticker_pid=
cleanup() {
	if [[ -n $ticker_pid ]]; then
		kill "$ticker_pid" 2>/dev/null || true
		wait "$ticker_pid" 2>/dev/null || true
	fi
	rm -rf "$work_dir"
}
trap cleanup EXIT

total=$("$go_cmd" list -C "$tools_dir" -deps "${packages[@]}" | wc -l)
log "building kube-apiserver $k8s_version and etcd v3.7.0 into $bin_dir"
log "($total packages; a cold build takes 5-9 minutes, a warm one seconds)"

start=$SECONDS
# Progress: go build -v names each package it compiles (cache hits are not named).
# The ticker sleeps in short steps so that nothing of it outlives this script by more than a second.
(
	exec 9>&- # a sleep outliving the script must not hold the build lock
	ticks=0
	while sleep 1; do
		if ((++ticks % 20 == 0)); then
			n=$(wc -l <"$build_log" 2>/dev/null || echo 0)
			log "... $((SECONDS - start))s, $n/$total packages compiled"
		fi
	done
) &
ticker_pid=$!

# Static binaries (as Kubernetes releases them); no VCS stamp, which would change with every commit.
if ! CGO_ENABLED=0 "$go_cmd" build -C "$tools_dir" -v -buildvcs=false -ldflags "$ldflags" \
	-o "$work_dir/" "${packages[@]}" 2>"$build_log"; then
	log "go build failed; last lines of its output:"
	tail -n 40 "$build_log" >&2
	exit 1
fi

# The etcd server's main package is go.etcd.io/etcd/server/v3, so go build names it "server".
mv -f "$work_dir/kube-apiserver" "$bin_dir/kube-apiserver"
mv -f "$work_dir/server" "$bin_dir/etcd"
echo "$want_stamp" >"$stamp_file"
log "done in $((SECONDS - start))s: $("$bin_dir/kube-apiserver" --version), etcd $("$bin_dir/etcd" --version | head -n 1 | awk '{print $NF}')"
