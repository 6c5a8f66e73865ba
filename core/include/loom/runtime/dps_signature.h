// The tensors a dps extern function takes (docs/ir.md, "Extern functions"):
// each one's dtype and extents, constant or symbolic.  The IR side reads it
// from a function's signature (tir::read_dps_signature); a runtime module
// that runs such functions checks its arguments against it
// (check_dps_arguments), so every kind that takes tensors only (asm,
// torchscript, a vendor's) checks them the same way.
#ifndef LOOM_RUNTIME_DPS_SIGNATURE_H_
#define LOOM_RUNTIME_DPS_SIGNATURE_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/object/any.h"

namespace loom::runtime {

struct DpsTensor {
  DataType dtype;
  std::vector<int64_t> dims;  // the constant extents; -1 for a symbolic one
  std::vector<int> dim_vars;  // index into DpsSignature::dims for a symbolic extent, else -1
};

struct DpsSignature {
  std::vector<DpsTensor> params;
  std::vector<std::string> dims;  // the symbolic dimensions, in order of first appearance

  // One line of text for a runtime module's bytes, and back (Error on a
  // malformed line).
  std::string serialize() const;
  static DpsSignature parse(const std::string& text);
};

// The tensors of a packed call's `count` arguments, in order: each
// NDArray's DLTensor, null for an argument that is not an array (which
// check_dps_arguments then names).
std::vector<const DLTensor*> array_arguments(const Any* args, int32_t count);

// Checks `count` arguments against `signature`: the count, each a CPU
// tensor (`device_note` says why, e.g. "asm code reads host memory") of the
// dtype, rank and constant extents, one value per symbolic dimension, and
// compact (row-major; any stride for an extent of 1).  Returns the values
// of the symbolic dimensions; Error naming the argument otherwise.
std::vector<int64_t> check_dps_arguments(const DpsSignature& signature, const DLTensor* const* args, size_t count,
                                         const std::string& device_note);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_DPS_SIGNATURE_H_
