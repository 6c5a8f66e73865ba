#!/usr/bin/env bash
# Packs what the OpenCL and Vulkan benchmarks need on a lent GPU machine
# (bench/README.md, "On a GPU"): the benchmarks and loomc, libloom_core and
# libloom_runtime, the plugins the device path uses (stripped), their
# Debian libraries (yaml-cpp, the OpenCL ICD loader, CLBlast, the Vulkan
# loader, glvnd's dispatch libraries that NVIDIA's drivers load) and glslc,
# laid out as the build tree is, so that plugins are found beside
# libloom_core.  The llvm plugin stays behind (LLVM 16 alone is 123 MB):
# run with LOOM_BENCH_HOST=c.
#
# Usage: bash bench/device_bundle.sh [BUILD_DIR [OUT_DIR]]   (defaults:
# build, .devbundle; keep OUT_DIR git-ignored, e.g. in .git/info/exclude)
# On the GPU machine:  bash OUT_DIR/run.sh  (see that file)
set -euo pipefail
build=${1:-build}
out=${2:-.devbundle}
[ -x "$build/bin/loom_bench_opencl" ] || { echo "no $build/bin/loom_bench_opencl: build first" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/loom/plugins" "$out/deps"

for b in loom_bench_opencl loom_bench_vulkan loomc run_model; do
  [ -x "$build/bin/$b" ] && strip -o "$out/bin/$b" "$build/bin/$b"
done
for l in "$build"/lib/libloom_core.so.* "$build"/lib/libloom_runtime.so.*; do
  [ -L "$l" ] && cp -P "$l" "$out/lib/" || strip -o "$out/lib/$(basename "$l")" "$l"
done
# Every plugin that links neither LLVM nor libtorch: the targets c, opencl
# and vulkan with their runtime halves, operators, passes, loop passes, ref
# for checks, the npu.  llvm, asm (LLVM) and torchscript (libtorch) stay
# behind.
for p in "$build"/lib/loom/plugins/loom_*.so; do
  ldd "$p" | grep -q -E 'libLLVM|libtorch|libMLIR' && continue
  strip -o "$out/lib/loom/plugins/$(basename "$p")" "$p"
done
cp "$(command -v glslc)" "$out/bin/"

# Shared libraries outside glibc and the C++ runtime, which the GPU
# machine's newer system provides.
deps() {
  ldd "$@" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux-x86-64)\.so|libloom_'
}
for d in $(deps "$out"/bin/* "$out"/lib/loom/plugins/*.so "$out"/lib/libloom_*.so.*.*); do
  cp -L "$d" "$out/deps/"
done
for d in /lib/x86_64-linux-gnu/libGLdispatch.so.0 /lib/x86_64-linux-gnu/libGLX.so.0 \
         /lib/x86_64-linux-gnu/libEGL.so.1 /lib/x86_64-linux-gnu/libOpenGL.so.0; do
  [ -e "$d" ] && cp -L "$d" "$out/deps/"
done
for d in $(deps "$out"/deps/*.so*); do
  [ -e "$out/deps/$(basename "$d")" ] || cp -L "$d" "$out/deps/"
done
cp bench/device_run.sh "$out/run.sh"
du -sh "$out"
