#!/usr/bin/env bash
# Sets up Loom on Debian 12: installs the Debian packages the project needs
# (only when some are missing), configures with the default CMake preset and
# builds with two jobs.  Idempotent; a no-op install and an up-to-date build
# take a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep this list in step with what CMakeLists.txt and the tests use.
PACKAGES=(
  cmake ninja-build g++ ccache   # build
  clang-format-14                # the C++ style, checked by the test e2e.format (.clang-format)
  libboost-dev                   # Boost.DLL (header-only, used with std::filesystem)
  libyaml-cpp-dev                # YAML configs
  libdlpack-dev                  # DLPack tensors (NDArray)
  googletest                     # GoogleTest sources and CMake package
  libgtest-dev
  python3                        # /usr/bin/python3 checks JSON output in e2e tests
  python3-numpy python3-pytest   # the pytest suite (tests/python): operators against NumPy
  python3-pytest-timeout         # a stalled pytest test fails alone (tests/CMakeLists.txt)
  python3-dev pybind11-dev       # the Python package's extension (python/)
  llvm-16-dev llvm-16-tools      # the llvm plugin (CPU codegen, ORC JIT); FileCheck
  libmlir-16-dev mlir-16-tools   # the mlir plugin (docs/extern-mlir.md): MLIR 16 in process; mlir-opt-16
  libopenblas0-pthread           # NumPy's BLAS: the peer of the matmul benchmark
  python3-torch                  # the peer of the MLP benchmark (bench/); models for the importers
  python3-onnx python3-torchvision  # the ONNX importer (docs/frontends.md) and its test models
  python3-torchaudio             # speech models for the importers (tests/python/frontend/test_audio.py)
  python3-threadpoolctl          # which OpenBLAS kernel the benchmarks' NumPy runs (bench/)
  python3-xgboost                # tuning's cost model (docs/tuning.md)
  python3-distributed            # tuning on a Dask cluster: dask-scheduler, dask-worker (docs/tuning.md)
  opencl-headers ocl-icd-opencl-dev  # the opencl plugin (docs/target-opencl.md): OpenCL over the ICD loader
  pocl-opencl-icd clinfo         # PoCL: OpenCL on this CPU, for the tests
  libclblast-dev                 # CLBlast: the peer of the OpenCL matmul benchmark (bench/opencl_bench.cc)
  libvulkan-dev                  # the vulkan plugin (docs/target-vulkan.md): the Vulkan loader and headers
  libshaderc-dev glslang-dev spirv-tools  # GLSL -> SPIR-V in process (static archives) and its validator
  glslc                          # the raw-Vulkan peer of the dispatch benchmark (bench/vulkan_bench.cc)
  mesa-vulkan-drivers            # lavapipe: Vulkan on this CPU, for the tests
  vulkan-validationlayers        # the Khronos validation layers the tests run under
  chromium tesseract-ocr tesseract-ocr-eng  # a profile's HTML drawn headless and read back (tests/python/rpc)
  libssl-dev                     # loom-rpc-server and loomc --remote: the handshake's HMAC-SHA256 (docs/rpc.md)
  valgrind                       # the C API's leak check over 1,000 load/call/unload cycles (tests/c)
  libtorch-dev                   # the torchscript plugin (docs/extern-torchscript.md): libtorch's C++ libraries
  golang-go                      # the Go binding (bindings/go, docs/languages.md): cgo and the standard library
  default-jdk-headless junit4    # the Java binding (bindings/java): JNI, javac, JUnit 4 for its tests
)

# Rust, for the Rust binding (bindings/rust, tests/bindings): the machine
# image's cargo (~/.cargo/bin) when there is one, else Debian's.
if ! command -v cargo > /dev/null && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  PACKAGES+=(cargo)
fi

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

if [ ! -f build/CMakeCache.txt ]; then
  cmake --preset default
fi
cmake --build build -j2
echo "setup: built build/bin/loomc and build/lib/loom/plugins/"
