#!/usr/bin/env bash
# The Rust binding (bindings/rust, docs/languages.md): cargo test of the
# crate against this build; then the plugin example written in Rust, built
# by cargo and used from loomc: its pass listed without loading it, a
# golden case, a YAML pipeline running it, and a panic in a pass as a Loom
# error naming it.  Usage: run_rust_test.sh LOOMC SOURCE_DIR BUILD_DIR
# (exit 77, a skip, when no cargo is installed: scripts/setup.sh installs
# Debian's).
set -euo pipefail
loomc=$1
src=$2
build=$3
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || cargo="$HOME/.cargo/bin/cargo"
if [ ! -x "$cargo" ]; then
  echo "no cargo (apt-get install cargo; scripts/setup.sh does): the Rust binding is not tested" >&2
  exit 77
fi
export CARGO_TARGET_DIR="$build/rust" LOOMC="$loomc" LOOM_LIB_DIR="$build/lib"
"$cargo" --version
# The crates have no dependencies, so their lock files hold nothing to pin;
# one written by another cargo (a newer format) would stop this one.
rm -f "$src/bindings/rust/Cargo.lock" "$src/bindings/rust/examples/fold_negation/Cargo.lock"
# The style, where this cargo has rustfmt (Debian's cargo comes without).
if "$cargo" fmt --version > /dev/null 2>&1; then
  (cd "$src/bindings/rust" && "$cargo" fmt --check)
  (cd "$src/bindings/rust/examples/fold_negation" && "$cargo" fmt --check)
fi
(cd "$src/bindings/rust" && "$cargo" test --offline --quiet)
(cd "$src/bindings/rust/examples/fold_negation" && "$cargo" test --offline --quiet && "$cargo" build --offline --quiet)
plugin_dir="$build/rust/debug"
[ -f "$plugin_dir/libloom_rust_passes.so" ]
export LOOM_PLUGIN_PATH="$plugin_dir"
# Listed from its manifest, not loaded.
"$loomc" passes list | grep -q "^RustFoldDoubleNegation"
"$loomc" plugins list | grep -E -q "^rust_passes +1\.0\.0 +discovered"
# The golden case.
fixtures="$src/tests/fixtures/rust"
diff <("$loomc" opt "$fixtures/double_negation.loom" --passes RustFoldDoubleNegation) "$fixtures/double_negation.expected"
# In a YAML pipeline: the same outputs as without it (the fold is exact).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'target: {kind: llvm}\npipeline:\n  passes: [RustFoldDoubleNegation, default]\n' > "$tmp/rust.yaml"
printf 'target: {kind: llvm}\n' > "$tmp/plain.yaml"
for c in rust plain; do
  "$loomc" run "$fixtures/double_negation.loom" --config "$tmp/$c.yaml" --seed 3 --output "$tmp/$c.npy" > /dev/null
done
cmp "$tmp/rust.npy" "$tmp/plain.npy"
# A panic is an error naming the pass, not an abort.
if "$loomc" opt "$fixtures/double_negation.loom" --passes RustPanicExample > "$tmp/out" 2> "$tmp/err"; then
  echo "RustPanicExample did not fail" >&2; exit 1
fi
cat "$tmp/err"
grep -q "RustPanicExample panicked: this pass always panics" "$tmp/err"
echo "rust: all checks passed"
