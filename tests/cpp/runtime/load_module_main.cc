// A fresh process for the export/load tests: loads LIB with load_module,
// prints its module tree, calls FUNC(x, y) on x[i] = 0.25 * i - 3 (N
// float32 values) and prints the result and y.  Errors go to stderr with
// exit status 1.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"

using namespace loom;
using namespace loom::runtime;

namespace {
std::string describe(const Module& m) {
  std::string out = m->type_key();
  auto children = m.imports();
  if (children.empty()) return out;
  out += "(";
  for (size_t i = 0; i < children.size(); ++i) out += (i ? " " : "") + describe(children[i]);
  return out + ")";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: loom_test_load_module LIB FUNC N\n";
    return 2;
  }
  try {
    Module m = load_module(argv[1]);
    std::cout << "tree: " << describe(m) << "\n";
    int64_t n = std::atoll(argv[3]);
    NDArray x = NDArray::empty({n}, DataType::Float(32));
    NDArray y = NDArray::empty({n}, DataType::Float(32));
    for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = 0.25f * static_cast<float>(i) - 3.0f;
    Any ret = m.get_function(argv[2])(x, y);
    std::cout << "ret: " << (ret.kind() == AnyKind::kInt ? std::to_string(ret.as_int()) : ret.describe()) << "\ny:";
    for (int64_t i = 0; i < n; ++i) std::printf(" %.9g", y.data_as<float>()[i]);
    std::cout << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
