#!/usr/bin/env bash
# Runs the OpenCL and Vulkan benchmarks on a lent GPU machine from the
# bundle bench/device_bundle.sh made (bench/README.md, "On a GPU").  Run
# from the repository root: bash .devbundle/run.sh [RUNS]; writes each
# log to $OUT (the device tool's folder) when it is set.
set -uo pipefail
b=$(cd "$(dirname "$0")" && pwd)
runs=${1:-21}
out=${OUT:-/tmp}
export LD_LIBRARY_PATH="$b/lib:$b/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$b/bin:$PATH"
export LOOM_BENCH_HOST=c

# NVIDIA's OpenCL driver through the carried ICD loader, its Vulkan driver
# through the carried Vulkan loader.
first() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; }
ocl=$(first /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
  $(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1))
icd=$(first /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
  /etc/vulkan/icd.d/nvidia_icd.json $(find /usr/local/nvidia /usr/share /etc -name 'nvidia_icd*.json' 2>/dev/null | head -1))
echo "OpenCL driver: ${ocl:-none found}; Vulkan ICD: ${icd:-none found}"
# Only NVIDIA's: a machine may have PoCL registered too, and the benchmarks
# take the first platform.
if [ -n "$ocl" ]; then
  mkdir -p /tmp/loom-ocl-vendors && echo "$ocl" > /tmp/loom-ocl-vendors/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/loom-ocl-vendors OCL_ICD_FILENAMES="$ocl"
fi
[ -n "$icd" ] && export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
export __EGL_VENDOR_LIBRARY_FILENAMES=$(first /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json)
nvidia-smi -L 2>/dev/null
echo "CC: $(command -v "${CC:-cc}" || echo none)"

status=0
step() {  # NAME COMMAND...: its log in $out/NAME.log, its status remembered
  local name=$1; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "== $name exited $rc"; status=1; }
}
step opencl loom_bench_opencl "$runs"
LOOM_BENCH_TILE_THREADS=256 step opencl_tile256 loom_bench_opencl "$runs" matmul
step vulkan loom_bench_vulkan "$runs"
# The examples on the GPU against the c target on its CPU.
for m in mlp cnn; do
  for t in c opencl vulkan; do
    if [ $t = c ]; then cfg="target: {kind: c}"
    else cfg="{target: {kind: $t, host: {kind: c}}, pipeline: {passes: [device]}}"; fi
    echo "$cfg" > "/tmp/$t.yaml"
    step "${m}_$t" loomc run "examples/$m.loom" --config "/tmp/$t.yaml" --seed 1 \
      --output "/tmp/${m}_$t.npy" --bench 50
  done
done
# Deployment with the runtime library alone (docs/c-api.md): the CNN
# exported for each target and run by the C example run_model, which links
# libloom_runtime only and loads the runtime halves the library names.
if command -v run_model >/dev/null; then
  python3 - <<'PY'
import re, numpy as np  # one seeded input per parameter of @main
text = open("examples/cnn.loom").read()
params = re.findall(r"%\w+: Tensor\[\(([^)]*)\)", text[text.index("@main"):text.index("->")])
rng = np.random.default_rng(1)
for i, dims in enumerate(params):
    x = rng.standard_normal([int(d) for d in dims.split(",")], dtype=np.float32)
    np.save(f"/tmp/cnn_in{i}.npy", x * np.float32(0.2 if i else 1))  # weights small: no saturated softmax
PY
  for t in c opencl vulkan; do
    step "cnn_${t}_build" loomc build examples/cnn.loom --config "/tmp/$t.yaml" -o "/tmp/cnn_$t.so"
    step "cnn_${t}_run_model" run_model "/tmp/cnn_$t.so" /tmp/cnn_in?.npy
    # What the process opened: the runtime library and runtime halves only.
    LD_DEBUG=files run_model "/tmp/cnn_$t.so" /tmp/cnn_in?.npy 2>&1 >/dev/null |
      grep -o 'file=[^ ;]*loom[^ ;]*' | sed 's|.*/||; s|file=||' | sort -u | tr '\n' ' ' |
      sed "s/^/run_model on $t opened: /"; echo
    if LD_DEBUG=files run_model "/tmp/cnn_$t.so" /tmp/cnn_in?.npy 2>&1 >/dev/null | grep -q 'file=[^ ]*libloom_core'; then
      echo "run_model on $t opened libloom_core"; status=1
    fi
  done
  for t in opencl vulkan; do
    top() { sed -n 2p "$1" | sed 's/ ([^)]*)//g'; }  # the indices, not the values
    if ! cmp -s <(top "$out/cnn_c_run_model.log") <(top "$out/cnn_${t}_run_model.log"); then
      echo "run_model: the CNN's top entries on $t differ from c's"; status=1
    fi
  done
fi
python3 - <<'PY' || status=1
import numpy as np, sys
bad = 0
for m in ("mlp", "cnn"):
    ref = np.load(f"/tmp/{m}_c.npy")
    for t in ("opencl", "vulkan"):
        try:
            err = float(np.abs(np.load(f"/tmp/{m}_{t}.npy") - ref).max())
        except OSError as e:
            print(f"{m} on {t}: no output ({e})"); bad = 1; continue
        print(f"{m} on {t}: largest difference from c on the CPU {err:.2g}")
        bad |= err > 1e-3
sys.exit(bad)
PY
exit $status
