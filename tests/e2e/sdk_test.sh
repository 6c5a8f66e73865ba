#!/usr/bin/env bash
# The SDK as a vendor uses it: install Loom into a prefix, build the template
# plugin out of tree with find_package(Loom) and loom_add_plugin, and load it
# with the installed loomc through LOOM_PLUGIN_PATH.
source "$(dirname "$0")/lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$BINARY_DIR" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; finish; }
for f in bin/loomc lib/libloom_core.so lib/libloom_runtime.so lib/cmake/Loom/LoomTargets.cmake include/loom/plugin.h include/loom/plugin_sdk.h include/loom/version.h \
         include/loom/object/function.h lib/cmake/Loom/LoomConfig.cmake lib/cmake/Loom/LoomPlugin.cmake \
         lib/loom/plugins/loom_hello.so share/loom/template/CMakeLists.txt; do
  [ -e "$prefix/$f" ] || fail "install is missing $f"
done
# Test fixtures are never installed.
ls "$prefix/lib/loom/plugins" | grep -q fx_ && fail "fixture plugins were installed"

# The installed loomc finds the installed plugins, relocated from the build tree.
expect_output installed-list 0 "$prefix/lib/loom/plugins/loom_hello.so" -- "$prefix/bin/loomc" plugins list
expect_output installed-call 0 "^hello, prefix!$" -- "$prefix/bin/loomc" call hello.greet prefix

cp -r "$prefix/share/loom/template" "$work/vendor"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if ! cmake -S "$work/vendor" -B "$work/vendor/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cfg.log" 2>&1; then
  cat "$work/cfg.log" >&2; fail "configure of the out-of-tree template"; finish
fi
if ! cmake --build "$work/vendor/build" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2; fail "build of the out-of-tree template"; finish
fi
so="$work/vendor/build/loom_template_plugin.so"
[ -f "$so" ] || fail "template plugin not produced at $so"

export LOOM_PLUGIN_PATH="$work/vendor/build"
# Its capabilities were declared at build time (loom_add_plugin ran the
# installed loomc and objcopy): the manifest lists none by hand.
expect_output vendor-list 0 "template_plugin +0\.1\.0 +discovered +function:template_plugin.scale" -- \
  "$prefix/bin/loomc" plugins list
readelf -S -W "$so" | grep -q "\.loom_declarations" || fail "the template plugin has no .loom_declarations section"
expect_output vendor-load 0 "loaded template_plugin 0\.1\.0" -- "$prefix/bin/loomc" plugins load template_plugin
expect_output vendor-call 0 "^10\.0$" -- "$prefix/bin/loomc" call template_plugin.scale 2.5 4
# The build tree's loomc loads the same out-of-tree plugin.
expect_output vendor-build-tree 0 "^10\.0$" -- "$LOOMC" call template_plugin.scale 2.5 4

# The example backend (docs/plugins.md, "Write a backend"), built out of
# tree like the template, used every way a user would.
cp -r "$prefix/share/loom/examples/acme" "$work/acme"
if ! cmake -S "$work/acme" -B "$work/acme/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" >"$work/acme-cfg.log" 2>&1 ||
   ! cmake --build "$work/acme/build" >"$work/acme-build.log" 2>&1; then
  cat "$work/acme-cfg.log" "$work/acme-build.log" >&2; fail "build of the out-of-tree acme backend"; finish
fi
export LOOM_PLUGIN_PATH="$work/vendor/build:$work/acme/build"
cd "$work/acme"
expect_output acme-load 0 "codegen: +acme.*op: +acme\.swish.*pass: +AcmeFuseSwish.*patterns: +acme.*target: +acme" -- \
  bash -c "'$prefix/bin/loomc' plugins load acme | tr '\n' ' '"
# The runtime half: the device and the runtime module, linking the runtime
# library alone.
expect_output acme-runtime-load 0 "device: +acme.*runtime: +acme" -- \
  bash -c "'$prefix/bin/loomc' plugins load acme_runtime | tr '\n' ' '"
if ldd build/loom_acme_runtime.so | grep -q libloom_core; then fail "loom_acme_runtime.so links libloom_core"; fi
expect_output acme-check 0 "" -- "$prefix/bin/loomc" check acme.yaml
expect_output acme-ir 0 "acme\.swish\(%h\)" -- "$prefix/bin/loomc" opt model.loom --passes AcmeFuseSwish
# loomc builds the library and runs it on inputs; NumPy checks the output.
/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(3)
for n, s in (('x', (4, 16)), ('w', (16, 8)), ('b', (8,))): np.save(n + '.npy', r.standard_normal(s).astype(np.float32))"
for config in acme.yaml partition.yaml; do
  expect_output "acme-run-$config" 0 "" -- "$prefix/bin/loomc" run model.loom --config "$config" \
    --input x.npy --input w.npy --input b.npy --output y.npy
  /usr/bin/python3 -c "import numpy as np; x, w, b, y = (np.load(n + '.npy') for n in 'xwby'); h = x.astype(np.float64) @ w
np.testing.assert_allclose(y, h / (1 + np.exp(-h)) + b, rtol=1e-5, atol=1e-5)" || fail "acme-run-$config: output differs from NumPy"
done
# The tag, listed without loading the plugin, and used from YAML.
expect_output acme-tag 0 "^tag acme_quad +kind acme \{num-threads: 4\} from acme: an Acme board with four DSP cores" -- \
  "$prefix/bin/loomc" targets list
printf 'target:\n  tag: acme_quad\n' >quad.yaml
expect_output acme-tag-run 0 "output 0: float32 \(4, 8\)" -- "$prefix/bin/loomc" run model.loom --config quad.yaml \
  --input x.npy --input w.npy --input b.npy
# The conformance kit passes the example backend: its operator against the
# reference interpreter, its own target's operators, the round trip
# through its loader, its device; the doctor says it loads.
expect_output acme-kit 0 "^ops acme: acme\.swish +pass +2 examples" -- "$prefix/bin/loomc" plugin test build/loom_acme.so
expect_output acme-kit-partition 0 "^roundtrip acme +pass" -- "$prefix/bin/loomc" plugin test build/loom_acme.so
expect_output acme-kit-device 0 "^device acme +pass" -- "$prefix/bin/loomc" plugin test build/loom_acme_runtime.so \
  --only device
expect_output acme-doctor 0 "verdict: +loads$" -- "$prefix/bin/loomc" plugin doctor build/loom_acme.so
expect_output acme-runtime-doctor 0 "verdict: +loads$" -- "$prefix/bin/loomc" plugin doctor build/loom_acme_runtime.so
printf 'target:\n  kind: acme\n  num-thread: 2\n' >typo.yaml
expect_output acme-yaml-error 1 "typo\.yaml:3:3: .*'num-thread'.*num-threads" -- "$prefix/bin/loomc" check typo.yaml
# Python, from the installed package: YAML, partitioning, the operator,
# the device and an exported library in a fresh process, against NumPy.
PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 check.py >"$work/acme-check.log" 2>&1 ||
  { cat "$work/acme-check.log" >&2; fail "acme check.py"; }
cd - >/dev/null
finish
