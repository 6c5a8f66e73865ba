#!/usr/bin/env bash
# Memory and undefined-behaviour checks (docs/reliability.md, "Sanitizers"):
#
#   asan      builds everything with AddressSanitizer and
#             UndefinedBehaviorSanitizer (GCC, build-asan/,
#             -DLOOM_SANITIZE=ON) and runs the whole test suite there: the
#             GoogleTest cases, fixture plugins, CLI and SDK tests, the fuzz
#             regressions and pytest (Python gets the ASan runtime
#             preloaded).  Any sanitizer report fails its test.
#   valgrind  runs `loomc build` of every example for the llvm and the ref
#             target, and `loomc run` of the llvm builds, under valgrind's
#             memcheck with the normal build (build/); any error fails.
#
#   bash scripts/sanitize.sh [asan|valgrind|all] [CTEST ARGS...]   (default: all)
#
# Not part of scripts/test.sh: the instrumented build and run take several
# times as long as the normal ones.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
[ $# -gt 0 ] && shift
case "$stage" in asan|valgrind|all) ;; *) echo "sanitize: unknown stage '$stage' (asan, valgrind, all)" >&2; exit 2 ;; esac

run_asan() {
  if [ ! -f build-asan/CMakeCache.txt ]; then
    cmake -S . -B build-asan -G Ninja -DLOOM_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build build-asan -j2
  # Reports go to files, one per process: tests capture their children's
  # stderr (pytest, the CLI tests), so a report there could pass unseen.
  # Leaks are not checked: Python and the plugins' dlopen keep memory to
  # the end of the process by design.  UBSan stops at its first report.
  local logs="$PWD/build-asan/sanitizer-logs" status=0
  rm -rf "$logs" && mkdir -p "$logs"
  # allocator_may_return_null: an allocation too large is an error Loom
  # reports (the reliability tests ask for 16 TiB), not an ASan abort.
  export ASAN_OPTIONS="detect_leaks=0:check_initialization_order=1:strict_string_checks=1:allocator_may_return_null=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
  ctest --test-dir build-asan --output-on-failure -j2 "$@" || status=1
  # Warnings are not reports (ASan's notice on the first stack switch,
  # loom/support/stack.h; an allocation too large, which Loom reports);
  # errors are.
  local log reports=0
  for log in "$logs"/*; do
    [ -e "$log" ] || continue
    if grep -qE "ERROR: |runtime error" "$log"; then
      echo "== sanitizer report: $log"; cat "$log"; reports=$((reports + 1))
    fi
  done
  if [ $reports -gt 0 ]; then echo "asan: $reports process(es) reported errors (above)" >&2; status=1; fi
  [ $status -eq 0 ] && echo "asan: the whole suite passed with no sanitizer report"
  return $status
}

run_valgrind() {
  command -v valgrind >/dev/null || { echo "sanitize: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
  [ -x build/bin/loomc ] || { echo "sanitize: no build/ yet; run 'bash scripts/setup.sh' first" >&2; exit 1; }
  local out status=0
  out=$(mktemp -d)
  trap 'rm -rf "$out"' RETURN
  # --error-exitcode makes any memcheck error fail the command; the only
  # suppressions are the dynamic loader's known false positives
  # (scripts/valgrind.supp).
  local vg=(valgrind -q --error-exitcode=99 --num-callers=30 --track-origins=yes
            --suppressions=scripts/valgrind.supp)
  for example in examples/mlp.loom examples/cnn.loom examples/gelu_mlp_tail.loom; do
    for config in configs/host.yaml configs/ref.yaml; do
      local lib name
      name=$(basename "$example" .loom)_$(basename "$config" .yaml)
      lib="$out/$name.so"
      echo "== valgrind loomc build $example --config $config"
      "${vg[@]}" build/bin/loomc build "$example" --config "$config" -o "$lib" || status=1
      # The ref target's library runs the reference interpreter, which
      # memcheck slows past 15 minutes for the MLP alone; the ASan stage
      # runs it through the whole test suite instead.
      [ "$config" = configs/ref.yaml ] && continue
      # Random inputs; gelu_mlp_tail's batch is symbolic, so it gets files.
      local inputs=()
      if [ "$example" = examples/gelu_mlp_tail.loom ]; then
        /usr/bin/python3 -c "import numpy as np, sys; r = np.random.default_rng(0)
for n, s in (('h', (8, 64)), ('bias', (64,)), ('x', (8, 64))): np.save(f'{sys.argv[1]}/{n}.npy', r.standard_normal(s).astype(np.float32))" "$out"
        inputs=(--input "$out/h.npy" --input "$out/bias.npy" --input "$out/x.npy")
      fi
      echo "== valgrind loomc run ($name)"
      "${vg[@]}" build/bin/loomc run "$lib" "${inputs[@]}" --output "$out/$name.npy" >/dev/null || status=1
    done
  done
  [ $status -eq 0 ] && echo "valgrind: clean" || echo "valgrind: errors above" >&2
  return $status
}

case "$stage" in
  asan) run_asan "$@" ;;
  valgrind) run_valgrind ;;
  all) run_valgrind && run_asan "$@" ;;
esac
