// A deployment program: runs a library built by `loomc build ... -o
// MODEL.so` (or Module.export_library) on .npy inputs and writes its
// outputs as .npy files.  It links libloom_runtime alone -- no IR, no
// passes, no compiler -- which is all a library whose kernels are machine
// code (the llvm target, asm) needs; a library with modules of another
// kind loads the plugins that read them (docs/runtime.md, "Deploying").
//
//   loom_deploy MODEL.so OUT_PREFIX [INPUT.npy...]
//
// writes OUT_PREFIX0.npy, OUT_PREFIX1.npy, ... (tuple results flattened)
// and prints one line per output.
#include <cstdio>
#include <string>
#include <vector>

#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/npy.h"

namespace {
using loom::Any;
using loom::runtime::NDArray;

void flatten(const Any& value, std::vector<NDArray>* out) {
  if (dynamic_cast<const loom::runtime::NDArrayNode*>(value.object())) {
    out->push_back(value.cast<NDArray>());
  } else if (dynamic_cast<const loom::ArrayNode*>(value.object())) {
    for (const Any& item : value.cast<loom::Array>()) flatten(item, out);
  } else {
    throw loom::Error("the model returned " + value.describe() + ", not tensors");
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.so OUT_PREFIX [INPUT.npy...]\n", argv[0]);
    return 2;
  }
  try {
    loom::runtime::Module model = loom::runtime::load_module(argv[1]);
    loom::Function main_function = model.get_function("main");
    std::vector<Any> inputs;
    for (int i = 3; i < argc; ++i) inputs.push_back(Any(loom::runtime::load_npy(argv[i])));
    Any result = main_function.call(inputs.data(), static_cast<int32_t>(inputs.size()));
    std::vector<NDArray> outputs;
    flatten(result, &outputs);
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::string path = std::string(argv[2]) + std::to_string(k) + ".npy";
      loom::runtime::save_npy(outputs[k], path);
      std::printf("output %zu: %s -> %s\n", k, outputs[k]->dtype.to_string().c_str(), path.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_deploy: %s\n", e.what());
    return 1;
  }
}
