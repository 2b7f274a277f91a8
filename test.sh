#!/usr/bin/env bash
# Runs every test of every module of the repository, with the race detector.
# Usage: ./test.sh
set -euo pipefail
cd "$(dirname "$0")"

echo "== library: go test -race ./..."
go test -race ./...

echo "== bench: go test -race ./..."
(cd bench && go test -race ./...)
