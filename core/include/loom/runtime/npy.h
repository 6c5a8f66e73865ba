// NumPy's .npy files (format versions 1.0 to 3.0): host NDArrays in and
// out, for `loomc run` and tests (docs/runtime.md, ".npy files").
// Little-endian C-order arrays of bool, int8..int64, uint8..uint64,
// float16, float32 and float64; anything else is refused with a message
// naming the file and what it holds.
#ifndef LOOM_RUNTIME_NPY_H_
#define LOOM_RUNTIME_NPY_H_

#include <string>

#include "loom/runtime/ndarray.h"

namespace loom::runtime {

NDArray load_npy(const std::string& path);
// The array in the bytes of a .npy file; `source` names it in errors.
NDArray parse_npy(const std::string& bytes, const std::string& source);
// Writes a host array (version 1.0 header).
void save_npy(const NDArray& array, const std::string& path);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_NPY_H_
