#!/usr/bin/env bash
# Runs every test of every module of the repository, with the race detector:
# the library, the benchmark report command, the Prometheus example, the
# controller-runtime cache, the examples, the docs check (hack/), and the end-to-end tests
# against a real kube-apiserver and etcd (built first, from Go modules, into
# e2e/.bin; a no-op when they are up to date).
# Usage: ./test.sh
set -euo pipefail
cd "$(dirname "$0")"

echo "== library: go test -race ./..."
go test -race ./...

echo "== bench: go test -race ./..."
(cd bench && go test -race ./...)

echo "== examples/prometheus: go test -race ./..."
(cd examples/prometheus && go test -race ./...)

echo "== controllerruntime: go test -race ./..."
(cd controllerruntime && go test -race ./...)

echo "== examples/controller, examples/manager, examples/sharded: go test -race ./..."
start=$SECONDS
for m in examples/controller examples/manager examples/sharded; do
	(cd "$m" && go test -race ./...)
done
echo "   ($((SECONDS - start))s)"

echo "== hack: go test -race ./... (the docs check: every Go snippet of the README and docs/ compiles, every link resolves)"
start=$SECONDS
(cd hack && go test -race ./...)
echo "   ($((SECONDS - start))s)"

echo "== e2e: building kube-apiserver and etcd (minutes the first time)"
bash e2e/hack/build-servers.sh
echo "== e2e: go test -race ./..."
(cd e2e && go test -race -count=1 -timeout 30m ./...)
