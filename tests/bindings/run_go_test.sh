#!/usr/bin/env bash
# The Go binding (bindings/go, docs/languages.md): go vet, then go test
# against this build (the MLP against a float64 reference, errors, a
# function written in Go, eight goroutines, DLPack), with cgo's strict
# pointer checks (GODEBUG=cgocheck=2); the example run once.  Offline:
# the package has no dependencies outside the standard library.
# Usage: run_go_test.sh LOOMC SOURCE_DIR BUILD_DIR (exit 77, a skip, when
# no go is installed: scripts/setup.sh installs golang-go).
set -euo pipefail
loomc=$1
src=$2
build=$3
if ! command -v go > /dev/null; then
  echo "no go (apt-get install golang-go; scripts/setup.sh does): the Go binding is not tested" >&2
  exit 77
fi
export LOOMC="$loomc" GOCACHE="$build/go-cache" GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export CGO_LDFLAGS="-L$build/lib -Wl,-rpath,$build/lib"
go version
cd "$src/bindings/go"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "not formatted as gofmt writes it: $unformatted" >&2; exit 1; }
go vet ./...
GODEBUG=cgocheck=2 go test -count=1 ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loomc" build "$src/examples/mlp.loom" --config "$src/configs/host.yaml" -o "$tmp/mlp.so"
out=$(go run ./example "$tmp/mlp.so")
echo "$out"
grep -q "^output: float32 \[64 10\]$" <<< "$out"
echo "go: all checks passed"
