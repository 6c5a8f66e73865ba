#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-16, ASan + UBSan, build-fuzz/) and
# runs each for SECONDS (default 60) on its seed corpus
# (docs/reliability.md, "Fuzzing").  A finding stops with the input saved
# under build-fuzz/findings/TARGET/; replay it with
#   build-fuzz/bin/loom_fuzz_TARGET build-fuzz/findings/TARGET/crash-...
# Needs clang-16 and libclang-rt-16-dev (apt-get install clang-16
# libclang-rt-16-dev); scripts/setup.sh does not install them.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#   TARGETs: parser json config module_tree npy manifest rpc (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parser json config module_tree npy manifest rpc)
for tool in clang-16 clang++-16; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (apt-get install clang-16 libclang-rt-16-dev)" >&2; exit 1; }
done

if [ ! -f build-fuzz/CMakeCache.txt ]; then
  cmake -S . -B build-fuzz -G Ninja -DLOOM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DBUILD_TESTING=OFF >/dev/null
fi
# The rpc target alone needs no instrumented core: build only what is asked.
if [ "${targets[*]}" = rpc ]; then
  cmake --build build-fuzz -j2 --target loom_fuzz_rpc
  seeds=build-fuzz/seeds
  rm -rf "$seeds"
else
  cmake --build build-fuzz -j2 --target loom_fuzz

  # Seed corpora: the fixtures, and what loom_fuzz_seeds writes from them.
  seeds=build-fuzz/seeds
  rm -rf "$seeds"
  mkdir -p "$seeds"/{parser,config}
  loom_fixtures=$(find tests/fixtures/ir tests/fixtures/passes examples -name '*.loom' 2>/dev/null)
  for f in $loom_fixtures; do cp "$f" "$seeds/parser/$(echo "$f" | tr / _)"; done
  for f in $(find tests/fixtures/config configs examples -name '*.yaml' 2>/dev/null); do
    cp "$f" "$seeds/config/$(echo "$f" | tr / _)"
  done
  # shellcheck disable=SC2086
  build-fuzz/bin/loom_fuzz_seeds "$seeds" $loom_fixtures
  cp build-fuzz/lib/libloom_fuzz_seed_plugin.so "$seeds/manifest/seed_plugin.so"
fi
mkdir -p "$seeds/rpc"
cp tests/fuzz/regressions/rpc/* "$seeds/rpc/"

# Inputs long enough for deep nesting in text; an ELF seed is ~14 KB.
declare -A max_len=([parser]=16384 [json]=16384 [config]=4096 [module_tree]=16384 [npy]=4096 [manifest]=65536 [rpc]=8192)
status=0
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz: no target '$t'" >&2; exit 2; }
  corpus=build-fuzz/corpus/$t findings=build-fuzz/findings/$t
  mkdir -p "$corpus" "$findings"
  echo "== fuzz $t for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
      build-fuzz/bin/loom_fuzz_"$t" "$corpus" "$seeds/$t" -max_total_time="$seconds" \
      -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$findings/" 2>build-fuzz/fuzz_$t.log; then
    echo "fuzz: $t found a problem; see build-fuzz/fuzz_$t.log and $findings/" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" build-fuzz/fuzz_$t.log | tail -3
done
exit $status
