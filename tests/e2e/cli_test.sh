#!/usr/bin/env bash
# loomc as a user runs it: help, listing (table and JSON), info, load, call,
# lazy loading through LOOM_PLUGIN_PATH, and the error paths.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
unset LOOM_PLUGIN_PATH

expect_output help 0 "Usage: loomc" -- "$LOOMC" --help
expect_output no-args 2 "Commands:" -- "$LOOMC"
expect_output plugins-help 0 "LOOM_PLUGIN_PATH" -- "$LOOMC" plugins --help
expect_output version 0 "^loomc [0-9]+\.[0-9]+\.[0-9]+$" -- "$LOOMC" --version
expect_output bad-command 2 "unknown command 'plugns'; did you mean 'plugins'\?" -- "$LOOMC" plugns list
expect_output plugin-alias 0 "^hello +1.0.0 +discovered" -- "$LOOMC" plugin list
expect_output bad-option 2 "unknown option '--jsn'" -- "$LOOMC" plugins list --jsn
expect_output bad-sub 2 "unknown plugins command 'lst'; did you mean 'list'\?" -- "$LOOMC" plugins lst
# One command table: each command takes its own flags only, says which it
# takes, counts its arguments and has its own --help.
expect_output foreign-flag 2 "unknown option '--bench' for 'build' \(it takes --config, -o, --emit, --dump-ir, --timing\)" -- "$LOOMC" build m.loom --bench 3
expect_output foreign-flag-hint 2 "Try 'loomc build --help'" -- "$LOOMC" build m.loom --bench 3
expect_output flag-twice 2 "--config is given twice to 'build'" -- "$LOOMC" build m.loom --config a.yaml --config b.yaml
expect_output flag-value 2 "--config needs a value \(FILE.yaml\)" -- "$LOOMC" build m.loom --config
expect_output arg-count 2 "build takes one input file" -- "$LOOMC" build
expect_output command-help 0 "^Usage: loomc build INPUT.loom --config FILE.yaml" -- "$LOOMC" build --help
expect_output sub-help 0 "^Usage: loomc plugins info NAME\|PATH \[--json\]" -- "$LOOMC" plugin info --help
expect_output no-options 2 "unknown option '--json' for 'plugins load' \(it takes no options\)" -- "$LOOMC" plugins load hello --json

# The build tree's plugin folder is searched without any configuration.
expect_output list 0 "hello +1\.0\.0 +discovered +function:hello.add,function:hello.describe,function:hello.greet" -- "$LOOMC" plugins list
expect_output info 0 "description: +Demo plugin" -- "$LOOMC" plugins info hello
expect_output info-typo 1 "no plugin named 'helo'; did you mean 'hello'\?" -- "$LOOMC" plugins info helo
expect_output load 0 "loaded hello 1\.0\.0 .* in [0-9.]+ ms" -- "$LOOMC" plugins load hello
expect_output load-lists-functions 0 "hello.greet +Greets" -- "$LOOMC" plugins load hello
# A plugin by its path: info reads the manifest without loading; load lists
# everything the plugin registered, by kind, after its functions.
expect_output info-path 0 "state: +discovered" -- "$LOOMC" plugins info "$BINARY_DIR/lib/loom/plugins/loom_hello.so"
expect_output info-path-missing 1 "no file $BINARY_DIR/nothing/loom_x.so" -- "$LOOMC" plugins info "$BINARY_DIR/nothing/loom_x.so"
expect_output info-path-failed 0 "reason: +C\+\+ ABI mismatch" -- "$LOOMC" plugins info "$FIXTURES/cxx_abi/loom_fx_cxx_abi.so"
# A file name ending in .so is a path for every plugins command, as for info.
expect_output declare-file 0 '"function:hello.greet"' -- env -C "$BINARY_DIR/lib/loom/plugins" "$LOOMC" plugins declare loom_hello.so
expect_output load-lists-everything 0 "target: +npu" -- "$LOOMC" plugins load "$BINARY_DIR/lib/loom/plugins/loom_npu.so"
expect_output load-lists-patterns 0 "patterns: +npu" -- "$LOOMC" plugins load npu
# Operators, registered or declared, with owner, arity, pattern and schema.
expect_output ops-list 0 "^conv2d +from ops +2 inputs, output_fusable: 2-D convolution" -- "$LOOMC" ops list
expect_output ops-list-attrs 0 "attributes: strides: Array = \[1, 1\]" -- "$LOOMC" ops list
expect_output ops-usage 2 "usage: loomc ops list" -- "$LOOMC" ops show
$PY -c 'import json,sys; o={x["name"]: x for x in json.loads(sys.argv[1])}; a={f["name"]: f for f in o["conv2d"]["attributes"]}; assert o["conv2d"]["owner"]=="ops" and o["conv2d"]["inputs"]==2 and a["groups"]["default"]=="1", o["conv2d"]' \
  "$("$LOOMC" ops list --json)" || fail "ops list --json content"
expect_output call 0 "^hello, Ada!$" -- "$LOOMC" call hello.greet Ada
expect_output call-negative 0 "^-7$" -- "$LOOMC" call hello.add -10 3
expect_output call-describe 0 '^2\.5$' -- "$LOOMC" call hello.describe 2.5
expect_output call-describe-str 0 '^"\[1, 2\]"$' -- "$LOOMC" call hello.describe "[1, 2]"
expect_output call-bad-arg 1 "argument 1 of function 'hello.add': expected int, got str 'x'" -- "$LOOMC" call hello.add 1 x
expect_output call-arity 1 "function 'hello.add' takes 2 arguments, got 1" -- "$LOOMC" call hello.add 1
expect_output call-unknown 1 "no function named 'nothing.here' is registered or provided by a plugin$" -- "$LOOMC" call nothing.here
# A typo of a function whose plugin is not loaded yet still gets a suggestion.
expect_output call-typo 1 "did you mean 'hello.greet'\?" -- "$LOOMC" call hello.gret x

# JSON: every field the issue names, for discovered, loaded-by-path and failed plugins.
json=$(LOOM_PLUGIN_PATH="$FIXTURES/good:$FIXTURES/cxx_abi:$FIXTURES/not_plugin" "$LOOMC" plugins list --json) \
  || fail "list --json exited non-zero"
$PY - "$json" <<'PYEOF' || fail "list --json content"
import json, sys
doc = json.loads(sys.argv[1])
plugins = {p["name"]: p for p in doc["plugins"]}
for p in doc["plugins"]:
    assert set(p) >= {"name", "version", "path", "provides", "requires", "state", "error"}, p
assert plugins["hello"]["state"] == "discovered" and plugins["hello"]["version"] == "1.0.0", plugins["hello"]
assert plugins["fx_good"]["provides"][0] == "function:fx_good.twice", plugins["fx_good"]
assert plugins["fx_cxx_abi"]["state"] == "failed", plugins["fx_cxx_abi"]
assert "C++ ABI mismatch" in plugins["fx_cxx_abi"]["error"], plugins["fx_cxx_abi"]
assert plugins["loom_not_plugin"]["state"] == "failed" and plugins["loom_not_plugin"]["version"] is None
assert "no .loom_manifest section" in plugins["loom_not_plugin"]["error"]
assert all(d.startswith("/") for d in doc["search_path"]), doc["search_path"]
PYEOF
info_json=$(LOOM_PLUGIN_PATH="$FIXTURES/dependent:$FIXTURES/good" "$LOOMC" plugins info fx_dependent --json)
$PY -c 'import json,sys; p=json.loads(sys.argv[1]); assert p["requires"]==["fx_good"] and p["state"]=="discovered", p' \
  "$info_json" || fail "info --json content"

# --load: every plugin ends loaded (with its functions) or failed (with why).
json=$(LOOM_PLUGIN_PATH="$FIXTURES/good:$FIXTURES/throws" "$LOOMC" plugins list --load --json) || fail "list --load exited non-zero"
$PY - "$json" <<'PYEOF' || fail "list --load --json content"
import json, sys
plugins = {p["name"]: p for p in json.loads(sys.argv[1])["plugins"]}
assert plugins["hello"]["state"] == "loaded" and "hello.greet" in plugins["hello"]["functions"], plugins["hello"]
assert plugins["fx_good"]["state"] == "loaded", plugins["fx_good"]
assert plugins["fx_throws"]["state"] == "failed", plugins["fx_throws"]
assert plugins["fx_throws"]["error"] == "init failed: device firmware not found", plugins["fx_throws"]
PYEOF

# Lazy loading: calling a function loads its plugin, requirements first.
expect_output lazy 0 "^44$" -- env LOOM_PLUGIN_PATH="$FIXTURES/dependent:$FIXTURES/good" "$LOOMC" call fx_dependent.quadruple 11
expect_output load-path 0 "loaded fx_good 2\.3\.4" -- "$LOOMC" plugins load "$FIXTURES/good/loom_fx_good.so"

# Failures name the file and the reason, and exit 1 without a crash.
expect_output fail-throw 1 "loom_fx_throws.so: init failed: device firmware not found" -- \
  env LOOM_PLUGIN_PATH="$FIXTURES/throws" "$LOOMC" plugins load fx_throws
expect_output fail-lazy 1 "loom_fx_throws.so: init failed: device firmware not found" -- \
  env LOOM_PLUGIN_PATH="$FIXTURES/throws" "$LOOMC" call fx_throws.leaked 1
expect_output fail-cycle 1 "dependency cycle: fx_cycle_a -> fx_cycle_b -> fx_cycle_a" -- \
  env LOOM_PLUGIN_PATH="$FIXTURES/cycle" "$LOOMC" plugins load fx_cycle_a
expect_output fail-missing 1 "plugin /nonexistent/loom_x.so: file not found" -- "$LOOMC" plugins load /nonexistent/loom_x.so
expect_output list-shows-failure 0 "reason: dependency|reason: duplicate plugin name 'fx_dup'" -- \
  env LOOM_PLUGIN_PATH="$FIXTURES/dup_a:$FIXTURES/dup_b" "$LOOMC" plugins list
expect_output relative-path-warning 0 "warning: LOOM_PLUGIN_PATH entry 'fixtures' is not an absolute path; ignored" -- \
  env LOOM_PLUGIN_PATH="fixtures" "$LOOMC" plugins list

# IR files: check and fmt.
IR="$SOURCE_DIR/tests/fixtures/ir"
expect_output check-ok 0 "dps_chain.loom: ok \(3 functions\)" -- "$LOOMC" check "$IR/valid/dps_chain.loom"
# The golden file parses but uses a free variable and buffer: not well formed.
expect_output check-ill-formed 1 "prim_all_nodes.loom: 2 problems:" -- "$LOOMC" check "$IR/golden/prim_all_nodes.loom"
expect_output check-ill-formed-detail 1 "@kernel: buffer '%free_buf' is used but is neither a parameter nor allocated" -- \
  "$LOOMC" check "$IR/golden/prim_all_nodes.loom"
expect_output check-error 1 "10_unknown_loop_kind.loom:3:34: unknown loop kind 'paralel'; did you mean 'parallel'\?" -- \
  "$LOOMC" check "$IR/errors/10_unknown_loop_kind.loom"
expect_output check-caret 1 "^ +\^$" -- "$LOOMC" check "$IR/errors/10_unknown_loop_kind.loom"
expect_output check-missing 1 "cannot read /nonexistent.loom: No such file or directory" -- "$LOOMC" check /nonexistent.loom
tmpir=$(mktemp -d)
grep -v '^#' "$IR/golden/graph_extern_all_nodes.loom" > "$tmpir/canonical.loom"
expect_output fmt-check-ok 0 "^$" -- "$LOOMC" fmt --check "$tmpir/canonical.loom"
sed 's/  let %z = /  let   %z =  /' "$tmpir/canonical.loom" > "$tmpir/messy.loom"
expect_output fmt-check-bad 1 "messy.loom:17: not in canonical form" -- "$LOOMC" fmt --check "$tmpir/messy.loom"
"$LOOMC" fmt "$tmpir/messy.loom" > "$tmpir/fixed.loom" || fail "fmt exited non-zero"
cmp -s "$tmpir/fixed.loom" "$tmpir/canonical.loom" || fail "fmt output differs from the canonical file"
rm -rf "$tmpir"

# Passes, targets and build.
expect_output passes-list 0 "^InferType +opt 0 +from core" -- "$LOOMC" passes list
expect_output targets-list 0 "attributes: mcpu: str = \"native\", num-threads: int \(0 to 1024\) = 0" -- "$LOOMC" targets list
expect_output targets-list-plugin 0 "null_target +from null +a target that generates nothing" -- "$LOOMC" targets list
$PY -c 'import json,sys; k={x["name"]: x for x in json.loads(sys.argv[1])["kinds"]}; assert k["cpu"]["attributes"][0]["name"]=="mcpu" and k["c"]["owner"]=="c", k' \
  "$("$LOOMC" targets list --json)" || fail "targets list --json content"
tmpb=$(mktemp -d)
expect_output build-timing 0 "InferType +1 " -- "$LOOMC" build "$IR/valid/dps_chain.loom" --config "$SOURCE_DIR/tests/fixtures/config/cpu_infer_type.yaml" \
  -o "$tmpb/out.loom" --timing --dump-ir "$tmpb/dump"
grep -q "^module attrs {target: meta\[0\]}" "$tmpb/out.loom" || fail "build output lacks the target attribute"
grep -q -- "-> Tensor\[(%batch, 16), float32\]" "$tmpb/out.loom" || fail "build output lacks inferred types"
"$LOOMC" check "$tmpb/out.loom" > /dev/null || fail "build output does not check"
[ -f "$tmpb/dump/002_InferType_after.loom" ] || fail "no IR dump after InferType"
expect_output build-bad-config 1 "01_unknown_top_level_key.yaml:4:1: unknown key 'pipline'" -- \
  "$LOOMC" build "$IR/valid/dps_chain.loom" --config "$SOURCE_DIR/tests/fixtures/config/errors/01_unknown_top_level_key.yaml"
expect_output build-no-config 2 "build needs --config" -- "$LOOMC" build "$IR/valid/dps_chain.loom"
expect_output build-emit 2 "--emit takes ir or lib, got 'so'" -- "$LOOMC" build "$IR/valid/dps_chain.loom" \
  --config "$SOURCE_DIR/configs/host.yaml" --emit so
expect_output build-lib-needs-o 2 "--emit lib needs -o FILE.so" -- "$LOOMC" build "$IR/valid/dps_chain.loom" \
  --config "$SOURCE_DIR/configs/ref.yaml" --emit lib
expect_output build-no-codegen 1 "no codegen for target kind 'cpu'" -- "$LOOMC" build "$IR/valid/dps_chain.loom" \
  --config "$SOURCE_DIR/tests/fixtures/config/cpu_infer_type.yaml" -o "$tmpb/host.so"
# A library through the ref target: the VM over the graph function, the ref
# module with the prim functions.
expect_output build-lib 0 "^$" -- "$LOOMC" build "$IR/valid/dps_chain.loom" --config "$SOURCE_DIR/configs/ref.yaml" -o "$tmpb/chain.so"
expect_output inspect-vm 0 "^  vm: 1 function \(main\)$" -- "$LOOMC" inspect "$tmpb/chain.so"
expect_output inspect-plan 0 "@main: 1 planned tensors in 1 storages, peak %batch \* 64 bytes" -- "$LOOMC" inspect "$tmpb/chain.so"
expect_output inspect-ref 0 "^    ref: 2 functions \(relu, scale\)$" -- "$LOOMC" inspect "$tmpb/chain.so"
expect_output inspect-source 0 "call_dps dps:scale" -- "$LOOMC" inspect "$tmpb/chain.so" --source bytecode
expect_output inspect-missing 1 "inspect: no file" -- "$LOOMC" inspect "$tmpb/none.so"
printf 'target:\n  kind: cpu\n  vector-bits: 0\npipeline:\n  config: {tir.vectorize: true}\n' > "$tmpb/scalar.yaml"
expect_output build-warning 0 "scalar.yaml:5:12: warning: pipeline config 'tir.vectorize: true' contradicts the target" -- \
  "$LOOMC" build "$IR/valid/dps_chain.loom" --config "$tmpb/scalar.yaml" -o "$tmpb/x.loom"
# A device target (docs/target-opencl.md): host code from target.host
# importing the OpenCL kernels, in one file; the kernels as OpenCL C.
printf 'target:\n  kind: opencl\n  host: {kind: llvm}\n' > "$tmpb/opencl.yaml"
printf '@twice = prim_func(%%A: Buffer[(%%n: int64), float32], %%B: Buffer[(%%n), float32]) {\n  for %%i: int64 from 0 extent %%n {\n    %%B[%%i] = %%A[%%i] * 2.0;\n  }\n}\n' > "$tmpb/twice.loom"
expect_output build-opencl 0 "^$" -- "$LOOMC" build "$tmpb/twice.loom" --config "$tmpb/opencl.yaml" -o "$tmpb/twice.so"
expect_output inspect-opencl-tree 0 "^    opencl: 1 function \(twice_kernel0\)$" -- "$LOOMC" inspect "$tmpb/twice.so"
expect_output inspect-opencl-source 0 "^__kernel void twice_kernel0\(__global float\* restrict B_data, __global float\* restrict A_data, int64_t n\)" -- \
  "$LOOMC" inspect "$tmpb/twice.so" --source opencl
printf 'target:\n  kind: opencl\n' > "$tmpb/opencl_no_host.yaml"
expect_output build-opencl-no-host 1 "target kind 'opencl' runs kernels on a device and needs a host target" -- \
  "$LOOMC" build "$tmpb/twice.loom" --config "$tmpb/opencl_no_host.yaml" -o "$tmpb/nohost.so"
rm -rf "$tmpb"

# loomc opt: the module after the passes named (or the config's pipeline),
# or the diagnostics.
tmpo=$(mktemp -d)
printf '@main = fn(%%x: Tensor[(2, 8), float32]) {\n  let %%a = exp(%%x);\n  relu(%%a)\n}\n' > "$tmpo/m.loom"
expect_output opt-fuse 0 "^@fused_exp_relu = prim_func\(%x: Buffer\[\(2, 8\), float32\]" -- \
  "$LOOMC" opt "$tmpo/m.loom" --passes FuseOps,LegalizeOps,FuseTIR
expect_output opt-types 0 "^@main = fn\(%x: Tensor\[\(2, 8\), float32\]\) -> Tensor\[\(2, 8\), float32\]" -- \
  "$LOOMC" opt "$tmpo/m.loom" --passes InferType
expect_output opt-contract 1 "pass 'FuseTIR' needs the property 'fused' .*run FuseOps before FuseTIR" -- \
  "$LOOMC" opt "$tmpo/m.loom" --passes LegalizeOps,FuseTIR
expect_output opt-unknown 1 "no pass named 'FuseOp'.*did you mean 'FuseOps'\?" -- "$LOOMC" opt "$tmpo/m.loom" --passes FuseOp
expect_output opt-needs-passes 2 "opt needs --passes A,B,... or --config FILE.yaml" -- "$LOOMC" opt "$tmpo/m.loom"
expect_output opt-config 0 "^module attrs \{target: meta\[0\]\}" -- "$LOOMC" opt "$tmpo/m.loom" --config "$SOURCE_DIR/configs/ref.yaml"
expect_output opt-config-pipeline 0 "call_dps<Tensor\[\(2, 8\), float32\]>\(@fused_exp_relu" -- \
  "$LOOMC" opt "$tmpo/m.loom" --config "$SOURCE_DIR/configs/ref.yaml"
expect_output opt-out 0 "^$" -- "$LOOMC" opt "$tmpo/m.loom" --passes InferType -o "$tmpo/typed.loom"
"$LOOMC" check "$tmpo/typed.loom" > /dev/null || fail "opt -o wrote a module that does not check"
# The golden runner fails on a case that does not hold and names it.
{ echo "# passes: DeadCodeElimination"; echo "# ----- holds"; cat "$tmpo/m.loom"; echo "# expect: unchanged"
  echo "# ----- wrong on purpose"; cat "$tmpo/m.loom"; echo "# expect-error: no such error"; } > "$tmpo/golden.loom"
expect_output golden-names-case 1 "golden.loom:8: case 'wrong on purpose': expected an error containing 'no such error'" -- \
  "$PASS_GOLDEN" "$tmpo/golden.loom"
expect_output golden-counts 1 "1 of 2 cases hold" -- "$PASS_GOLDEN" "$tmpo/golden.loom"
rm -rf "$tmpo"

# FoldConstant evaluates through its declared evaluator (the ref plugin's
# ref.run_prim_func, which the passes plugin's manifest requires), never
# through the driver: no pass plugin refers to a driver symbol.
expect_output passes-requires-evaluator 0 "^requires: +function:ref.run_prim_func$" -- "$LOOMC" plugins info passes
for plugin in passes loop_passes; do
  nm -DC --undefined-only "$BINARY_DIR/lib/loom/plugins/loom_$plugin.so" | grep -q "loom::driver::" \
    && fail "plugin $plugin calls the driver"
done

# Listings and the config check read the plugins' declarations (written at
# build time): they answer without loading any plugin.  LD_DEBUG=libs names
# every library whose initialisers run; a plugin would be one of them.
plugin_inits() { LD_DEBUG=libs "$LOOMC" "$@" 2>&1 >/dev/null | grep "calling init:" | grep -c "/loom/plugins/"; }
[ "$(plugin_inits plugins load hello)" != 0 ] || fail "LD_DEBUG does not show a plugin being loaded"
for args in "passes list" "passes list --json" "targets list" "targets list --json" "plugins info passes" \
            "plugins info llvm --json" "plugins list" "check $SOURCE_DIR/configs/host.yaml"; do
  # shellcheck disable=SC2086
  [ "$(plugin_inits $args)" = 0 ] || fail "loomc $args loaded plugin code"
done
expect_output passes-declared 0 "^FuseOps +opt 1  from passes" -- "$LOOMC" passes list
expect_output passes-declared-options 0 "options: max_depth: int \(1 to 256\) = 8" -- "$LOOMC" passes list
expect_output passes-declared-contract 0 "needs: buffers_flat" -- "$LOOMC" passes list
expect_output targets-declared 0 "^llvm +from llvm" -- "$LOOMC" targets list
expect_output targets-declared-attrs 0 "attributes: mtriple: str = \"\", mcpu: str = \"native\"" -- "$LOOMC" targets list
# Tags: kind, attributes, owner and doc, from the declarations (the loop
# above checked that listing loads nothing); a config names one, checked
# from the declarations too, and overrides an attribute.
expect_output tags-declared 0 "^tag null_wide +kind null_target \{vector-bits: 512\} from null: the null target with a 512-bit vector unit$" -- \
  "$LOOMC" targets list
$PY -c 'import json,sys; t={x["name"]: x for x in json.loads(sys.argv[1])["tags"]}["null_wide"]
assert t == {"name": "null_wide", "kind": "null_target", "doc": "the null target with a 512-bit vector unit", "owner": "null", "attributes": {"vector-bits": 512}}, t' \
  "$("$LOOMC" targets list --json)" || fail "targets list --json tags"
tmpc0=$(mktemp -d)
printf 'target: {tag: null_wide, vector-bits: 256}\n' > "$tmpc0/tag.yaml"
expect_output check-config-tag 0 "tag.yaml: ok" -- "$LOOMC" check "$tmpc0/tag.yaml"
[ "$(plugin_inits check "$tmpc0/tag.yaml")" = 0 ] || fail "loomc check of a tag loaded plugin code"
printf 'target: {tag: null_wide, vector-bitz: 256}\n' > "$tmpc0/tag_typo.yaml"
expect_output check-config-tag-attr 1 "tag_typo.yaml:1:26: target kind 'null_target' has no attribute 'vector-bitz'; did you mean 'vector-bits'\?" -- \
  "$LOOMC" check "$tmpc0/tag_typo.yaml"
printf 'target: {tag: null_wid}\n' > "$tmpc0/tag_name.yaml"
expect_output check-config-tag-name 1 "tag_name.yaml:1:15: no target tag named 'null_wid' is registered or provided by a plugin; did you mean 'null_wide'\?" -- \
  "$LOOMC" check "$tmpc0/tag_name.yaml"
rm -rf "$tmpc0"
expect_output info-declared 0 "^pass: +FuseOps \(opt 1\), options: max_depth: int \(1 to 256\) = 8$" -- "$LOOMC" plugins info passes
expect_output info-declared-kind 0 "^target kind: +llvm: mtriple: str" -- "$LOOMC" plugins info llvm
expect_output info-declared-ops 0 "^operators: +105: " -- "$LOOMC" plugins info ops
expect_output check-config 0 "host.yaml: ok \(passes: cpu_channels_last\)$" -- "$LOOMC" check "$SOURCE_DIR/configs/host.yaml"
tmpc=$(mktemp -d)
printf 'target: {kind: llvm, mcpuu: x}\n' > "$tmpc/a.yaml"
expect_output check-config-attr 1 "a.yaml:1:22: target kind 'llvm' has no attribute 'mcpuu'; did you mean 'mcpu'\?" -- \
  "$LOOMC" check "$tmpc/a.yaml"
printf 'target: {kind: ref}\npipeline:\n  passes: [{name: FuseOps, options: {max_deph: 3}}]\n' > "$tmpc/b.yaml"
expect_output check-config-option 1 "b.yaml:3:38: pass 'FuseOps' has no option 'max_deph'; did you mean 'max_depth'\?" -- \
  "$LOOMC" check "$tmpc/b.yaml"
[ "$(plugin_inits check "$tmpc/b.yaml")" = 0 ] || fail "loomc check of a bad config loaded plugin code"
printf 'target: {kind: ref}\npipeline:\n  config: {FuseOps.max_depth: 4}\n' > "$tmpc/c.yaml"
expect_output check-config-key 0 "c.yaml: ok \(passes: cpu\)" -- "$LOOMC" check "$tmpc/c.yaml"
expect_output build-config-key 0 "^$" -- "$LOOMC" build "$IR/valid/dps_chain.loom" --config "$tmpc/c.yaml" -o "$tmpc/c.so"
rm -rf "$tmpc"

# The current directory is never searched: a plugin there is not found.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$FIXTURES/good/loom_fx_good.so" "$tmp/"
(cd "$tmp" && "$LOOMC" plugins list | grep -q fx_good) && fail "a plugin in the current directory was discovered"
(cd "$tmp" && LOOM_PLUGIN_PATH=":." "$LOOMC" plugins list 2>/dev/null | grep -q fx_good) && fail "'.' in LOOM_PLUGIN_PATH was searched"

finish
