// Registry functions of linear algebra the operator library has no
// kernel for (docs/runtime.md, "Registry functions"): the determinant of
// square matrices (ONNX's Det), by LU decomposition with partial
// pivoting in float64.  Host tensors only.
#include <cmath>
#include <utility>
#include <vector>

#include "loom/object/function.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/error.h"

namespace loom::runtime {
namespace {

template <class T>
void determinants(const T* in, T* out, int64_t count, int64_t n) {
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < count; ++m) {
    for (int64_t k = 0; k < n * n; ++k) a[k] = static_cast<double>(in[m * n * n + k]);
    double det = 1.0;
    for (int64_t c = 0; c < n && det != 0.0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
      if (a[pivot * n + c] == 0.0) {
        det = 0.0;
        break;
      }
      if (pivot != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[r * n + c] / a[c * n + c];
        for (int64_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      }
    }
    out[m] = static_cast<T>(det);
  }
}

// det(x): the determinants of x's (..., n, n) matrices, shape (...).
NDArray det(const NDArray& x) {
  if (!x.defined()) LOOM_THROW(TypeError) << "runtime.det: the input is not a tensor";
  const NDArrayNode& a = *x.get();
  if (a.device.device_type != kDLCPU || !a.is_contiguous()) {
    LOOM_THROW(Error) << "runtime.det: the input must be a contiguous host tensor";
  }
  std::vector<int64_t> dims = x.shape_vector();
  if (dims.size() < 2 || dims[dims.size() - 1] != dims[dims.size() - 2]) {
    LOOM_THROW(TypeError) << "runtime.det: needs square matrices (..., n, n), got " << dims.size() << "-D";
  }
  const int64_t n = dims.back();
  dims.resize(dims.size() - 2);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  NDArray out = NDArray::empty(dims, a.dtype);
  auto* dst = const_cast<NDArrayNode*>(out.get())->data();
  if (a.dtype == DataType::Float(32)) {
    determinants(static_cast<const float*>(a.data()), static_cast<float*>(dst), count, n);
  } else if (a.dtype == DataType::Float(64)) {
    determinants(static_cast<const double*>(a.data()), static_cast<double*>(dst), count, n);
  } else {
    LOOM_THROW(TypeError) << "runtime.det: takes float32 or float64, not " << a.dtype.to_string();
  }
  return out;
}

const bool registered = [] {
  FunctionRegistry::register_function("runtime.det", Function::typed(det, "runtime.det"),
                                      "det(x): the determinants of x's (..., n, n) matrices (float32 or float64)");
  return true;
}();

}  // namespace
}  // namespace loom::runtime
