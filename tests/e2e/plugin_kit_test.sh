#!/usr/bin/env bash
# The plugin doctor and the conformance kit (docs/plugin-tools.md): the kit
# passes every in-tree plugin, and finds each planted fault of the fixtures
# (tests/fixtures/plugins/kit_*.cc, missing_lib.cc, ...) as the failing row
# with its reason; the doctor explains each fixture that does not load.
source "$(dirname "$0")/lib.sh"
PLUGINS="$BINARY_DIR/lib/loom/plugins"
FX="$FIXTURES"

# Every in-tree plugin conforms; the rows it must have are there and pass.
for so in "$PLUGINS"/loom_*.so; do
  out=$("$LOOMC" plugin test "$so" 2>&1); status=$?
  if [ "$status" != 0 ]; then fail "plugin test $(basename "$so"): exit $status"; echo "$out" >&2; continue; fi
  for row in manifest init declarations; do
    grep -Eq "^$row +pass " <<<"$out" || fail "plugin test $(basename "$so"): no passing '$row' row"
  done
done
# What the code-generating plugins are checked on.
for kind in llvm c opencl vulkan; do
  expect_output "kit $kind: conv2d" 0 "^ops $kind: conv2d +pass +3 examples" -- "$LOOMC" plugin test "$PLUGINS/loom_$kind.so" --only "ops $kind: conv2d"
done
# The device comes from the runtime half (docs/target-opencl.md, "Two plugins").
expect_output "kit opencl_runtime: device" 0 "^device opencl +pass +alloc, copy of 4096 bytes" -- "$LOOMC" plugin test "$PLUGINS/loom_opencl_runtime.so" --only device
expect_output "kit npu: partition ops" 0 "^ops npu: conv2d +pass" -- "$LOOMC" plugin test "$PLUGINS/loom_npu.so"
expect_output "kit npu: roundtrip" 0 "^roundtrip npu +pass +.*exported, loaded back, same outputs" -- "$LOOMC" plugin test "$PLUGINS/loom_npu.so"
expect_output "kit null: tag" 0 "^tag null_wide +pass +a target of kind null_target" -- "$LOOMC" plugin test "$PLUGINS/loom_null.so"

# JSON: one object per row, and the totals.
json=$("$LOOMC" plugin test "$PLUGINS/loom_null.so" --json)
/usr/bin/python3 - "$json" <<'PY' || fail "plugin test --json"
import json, sys
d = json.loads(sys.argv[1])
assert d["failed"] == 0 and d["passed"] == len(d["rows"]) >= 4, d
assert {r["check"] for r in d["rows"]} >= {"manifest", "init", "declarations", "target null_target", "tag null_wide"}, d
PY

# Planted faults: each is its failing row, with the reason; the rest passes.
faults=$("$LOOMC" plugin test "$FX/kit_faults/loom_fx_kit_faults.so" 2>&1); status=$?
[ "$status" = 1 ] || fail "kit_faults: exit $status, expected 1"
check_row() {
  grep -Eq -- "$2" <<<"$faults" || { fail "kit_faults: no row /$2/ ($1)"; echo "$faults" >&2; }
}
check_row "a wrong add" "^ops fx_wrong: add +fail +example 1 \(add\(%a0, %a1\)\): output 0 element 0: got [0-9.e-]+, the reference [0-9.e-]+ \(tolerance 1e-05"
check_row "other ops pass" "^ops fx_wrong: subtract +pass"
check_row "unsaveable module" "^roundtrip fx_wrong +fail +.*a module of type 'fx_wrong' cannot be saved"
check_row "a pipeline naming no pass" "^target fx_badpipe +fail +the default pipeline of target kind 'fx_badpipe': no pass named 'NoSuchPass'"
check_row "a device copy that flips a byte" "^device fxdev +fail +byte 7 came back as [0-9]+, was [0-9]+"
check_row "the totals" "kit_faults.so: [0-9]+ passed, 4 failed, 0 skipped"
expect_output "kit: init crashes" 1 "^init +fail +the process died of SIGSEGV" -- "$LOOMC" plugin test "$FX/kit_crash/loom_fx_kit_crash.so"
expect_output "kit: init hangs" 1 "^init +fail +did not finish within 2 s" -- "$LOOMC" plugin test "$FX/kit_hang/loom_fx_kit_hang.so" --timeout 2
expect_output "kit: static initialiser" 1 "^init +fail +it registers function:fx_static_register.early from a static initialiser" -- "$LOOMC" plugin test "$FX/static_register/loom_fx_static_register.so"
expect_output "kit: C++ ABI" 1 "^manifest +fail +C\+\+ ABI mismatch" -- "$LOOMC" plugin test "$FX/cxx_abi/loom_fx_cxx_abi.so"
expect_output "kit: promised, not registered" 1 "^init +fail +its manifest provides" -- "$LOOMC" plugin test "$FX/liar/loom_fx_liar.so"
expect_output "kit: no declarations" 1 "^declarations +fail +the plugin has no .loom_declarations section" -- "$LOOMC" plugin test "$FX/good/loom_fx_good.so"
expect_output "kit: no file" 1 "no file" -- "$LOOMC" plugin test "$FX/nowhere.so"

# The doctor: a good plugin loads; each broken one, why.
expect_output "doctor: good" 0 "verdict: +loads$" -- "$LOOMC" plugin doctor "$PLUGINS/loom_null.so"
expect_output "doctor: missing library" 1 "missing: +libloom_fx_helper.so.3: the dynamic loader finds no such library; Debian names the package that ships it libloom-fx-helper3" -- "$LOOMC" plugin doctor "$FX/missing_lib/loom_fx_missing_lib.so"
expect_output "doctor: undefined symbol" 1 "undefined: +loom::removed_from_this_core\(int\) \(Loom's core API: this core [0-9.]+ does not define it\)" -- "$LOOMC" plugin doctor "$FX/undefined_symbol/loom_fx_undefined_symbol.so"
expect_output "doctor: C++ ABI" 1 "C\+\+ ABI: +itanium/libstdc\+\+-cxx98 \(this core: itanium/libstdc\+\+-cxx11\)" -- "$LOOMC" plugin doctor "$FX/cxx_abi/loom_fx_cxx_abi.so"
expect_output "doctor: core version" 1 "verdict: +does not load: core version mismatch" -- "$LOOMC" plugin doctor "$FX/core_version/loom_fx_core_version.so"
expect_output "doctor: static initialiser" 1 "load: +failed in a child process: it registers function:fx_static_register.early from a static initialiser" -- "$LOOMC" plugin doctor "$FX/static_register/loom_fx_static_register.so"
expect_output "doctor: crash" 1 "load: +failed in a child process: the process died of SIGSEGV" -- "$LOOMC" plugin doctor "$FX/kit_crash/loom_fx_kit_crash.so"
expect_output "doctor: not a plugin" 1 "manifest: +not a Loom plugin: no .loom_manifest section" -- "$LOOMC" plugin doctor "$FX/not_plugin/loom_not_plugin.so"
# A copy of an installed plugin: its name and capabilities conflict.
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
cp "$PLUGINS/loom_null.so" "$scratch/loom_null.so"
expect_output "doctor: duplicate" 0 "conflict: +'target:null_target' is already provided by installed plugin 'null'" -- "$LOOMC" plugin doctor "$scratch/loom_null.so"
expect_output "doctor: same name" 0 "conflict: +an installed plugin has the name 'null'" -- "$LOOMC" plugin doctor "$scratch/loom_null.so"

# The SDK stops a C++ ABI mismatch at compile time, with one error line.
echo '#include <loom/plugin_sdk.h>' > "$scratch/abi.cc"
out=$(c++ -std=c++17 -fsyntax-only -D_GLIBCXX_USE_CXX11_ABI=0 -I"$SOURCE_DIR/sdk/include" -I"$BINARY_DIR/include" \
      -I"$SOURCE_DIR/core/include" "$scratch/abi.cc" 2>&1); status=$?
[ "$status" != 0 ] || fail "a cxx98 translation unit compiled against the SDK"
[ "$(grep -c 'error:' <<<"$out")" = 1 ] || { fail "the ABI check is not one error line:"; echo "$out" >&2; }
grep -q "error: #error \"C++ ABI mismatch: the Loom core is built for itanium/libstdc++-cxx11" <<<"$out" ||
  { fail "the ABI #error text"; echo "$out" >&2; }
c++ -std=c++17 -fsyntax-only -I"$SOURCE_DIR/sdk/include" -I"$BINARY_DIR/include" -I"$SOURCE_DIR/core/include" \
  "$scratch/abi.cc" || fail "the SDK header does not compile with the core's ABI"
finish
