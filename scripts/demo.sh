#!/usr/bin/env bash
# The main demo: list the plugins Loom discovers (without loading them),
# inspect one, load it by name, and call functions it registered -- the
# last call loads its plugin lazily, on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOMC=build/bin/loomc
run() { echo; echo "\$ loomc $*"; "$LOOMC" "$@"; }

run plugins list
run plugins info hello
run plugins load hello
run call hello.greet "Loom user"
run call hello.add 40 2
result=$("$LOOMC" call hello.add 40 2)
[ "$result" = "42" ] || { echo "demo: expected 42 from hello.add, got '$result'" >&2; exit 1; }

# Compile a small model with the reference interpreter into one library and
# look inside: the VM over the graph function, the fused prim function.
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
run build examples/gelu_mlp_tail.loom --config configs/ref.yaml -o "$out/tail.so"
run inspect "$out/tail.so"
"$LOOMC" inspect "$out/tail.so" | grep -q "ref: 1 function (fused_add_gelu_add_clip)" \
  || { echo "demo: the built library lacks its prim functions" >&2; exit 1; }
echo; echo "demo: ok"
