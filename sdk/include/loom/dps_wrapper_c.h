// C source for the wrappers a self-building extern kind generates around
// its compiled code (the asm and mlir kinds; a vendor's kind that links
// host code the same way): a LoomBackendFunc per function
// (loom/runtime/c_backend_api.h) that checks its DLTensor arguments
// against the function's dps signature before it calls the code.
//
// One checker, so every such kind refuses a wrong argument with the same
// words (docs/extern-asm.md, "Calling convention"): the argument count, a
// tensor on the CPU, the dtype, the rank, each constant extent, one value
// per symbolic dimension, compact (row-major; any stride for an extent of
// 1).  The messages do not name the function: the host prefixes "NAME: ".
//
// Header only: it writes text, links nothing, and its output needs only
// "loom/runtime/c_backend_api.h", which the host supplies when it compiles
// the wrappers.
#ifndef LOOM_DPS_WRAPPER_C_H_
#define LOOM_DPS_WRAPPER_C_H_

#include <algorithm>
#include <sstream>
#include <string>

#include "loom/runtime/dps_signature.h"

namespace loom::dps_wrapper_c {

// The static C functions PREFIX_fail(message) and PREFIX_tensor(...),
// which checks argument `index`, binds its symbolic extents and returns
// its data pointer, and, when `sizes`/`strides` are not null, its extents
// and row-major strides (a memref descriptor's parts).  `device_note` and
// `compact_note` end the device and compactness messages ("asm code reads
// host (CPU) memory", "asm code needs compact tensors").
inline std::string checker(const std::string& prefix, const std::string& device_note, const std::string& compact_note) {
  std::string c = R"(
static int32_t PREFIX_fail(const char* message) {
  __loom_host_api->set_last_error(message);
  return -1;
}

/* Checks argument `index`, binds its symbolic extents and gives its data
 * pointer and, when sizes and strides are not null, its extents and
 * row-major strides. */
static int32_t PREFIX_tensor(int index, const LoomValue* args, const int32_t* codes, uint8_t code, uint8_t bits,
                             const char* dtype, int32_t ndim, const int64_t* dims, const int* vars,
                             const char* const* var_names, int64_t* values, int* bound, void** data,
                             int64_t* sizes, int64_t* strides) {
  static __thread char message[512];
  if (codes[index] != kLoomDLTensor) {
    snprintf(message, sizeof message, "argument %d must be a tensor", index);
    return PREFIX_fail(message);
  }
  const DLTensor* t = (const DLTensor*)args[index].v_handle;
  if (t->device.device_type != kDLCPU) {
    snprintf(message, sizeof message, "argument %d is on device type %d; DEVICE_NOTE",
             index, (int)t->device.device_type);
    return PREFIX_fail(message);
  }
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
    snprintf(message, sizeof message, "argument %d has dtype code %d bits %d lanes %d, expected %s", index,
             (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes, dtype);
    return PREFIX_fail(message);
  }
  if (t->ndim != ndim) {
    snprintf(message, sizeof message, "argument %d has rank %d, expected %d", index, (int)t->ndim,
             (int)ndim);
    return PREFIX_fail(message);
  }
  int empty = 0;  /* a tensor with no elements is compact whatever its strides */
  for (int d = 0; d < ndim; ++d) empty = empty || t->shape[d] == 0;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    int64_t extent = t->shape[d];
    if (vars[d] < 0 && extent != dims[d]) {
      snprintf(message, sizeof message, "argument %d has extent %lld in dimension %d, expected %lld", index,
               (long long)extent, d, (long long)dims[d]);
      return PREFIX_fail(message);
    }
    if (vars[d] >= 0) {
      if (bound[vars[d]] && values[vars[d]] != extent) {
        snprintf(message, sizeof message,
                 "argument %d has extent %lld in dimension %d, but %s is %lld from an earlier argument",
                 index, (long long)extent, d, var_names[vars[d]], (long long)values[vars[d]]);
        return PREFIX_fail(message);
      }
      bound[vars[d]] = 1;
      values[vars[d]] = extent;
    }
    if (t->strides && extent != 1 && t->strides[d] != stride && !empty) {
      snprintf(message, sizeof message, "argument %d is not compact (row-major); COMPACT_NOTE", index);
      return PREFIX_fail(message);
    }
    if (sizes) sizes[d] = extent;
    if (strides) strides[d] = stride;
    stride *= extent;
  }
  *data = (char*)t->data + t->byte_offset;
  return 0;
}
)";
  auto replace_all = [&c](const std::string& from, const std::string& to) {
    for (size_t at = c.find(from); at != std::string::npos; at = c.find(from, at + to.size()))
      c.replace(at, from.size(), to);
  };
  replace_all("PREFIX", prefix);
  replace_all("DEVICE_NOTE", device_note);
  replace_all("COMPACT_NOTE", compact_note);
  return c;
}

// The start of a wrapper's body, for a function taking `signature`'s
// tensors: the symbolic dimensions' names, values and bound flags
// (var_names, values, bound) and the check of the argument count.
inline std::string prologue(const std::string& prefix, const runtime::DpsSignature& signature) {
  std::ostringstream c;
  size_t n = signature.params.size();
  size_t dims = signature.dims.size();
  c << "  static const char* const var_names[] = {";
  for (size_t k = 0; k < dims; ++k) c << (k ? ", " : "") << "\"" << signature.dims[k] << "\"";
  c << (dims == 0 ? "0" : "") << "};\n";
  c << "  int64_t values[" << std::max<size_t>(dims, 1) << "] = {0};\n";
  c << "  int bound[" << std::max<size_t>(dims, 1) << "] = {0};\n";
  c << "  (void)ret; (void)resource; (void)var_names;\n";
  c << "  if (num_args != " << n << ") {\n"
    << "    static __thread char message[160];\n"
    << "    snprintf(message, sizeof message, \"takes " << n << " tensor" << (n == 1 ? "" : "s")
    << " (inputs, then outputs), got %d\", (int)num_args);\n"
    << "    return " << prefix << "_fail(message);\n  }\n";
  return c.str();
}

// The statement that checks argument `index` (PREFIX_tensor) and returns
// -1 from the wrapper when it is wrong; `data`, `sizes` and `strides` are
// C lvalue expressions (sizes and strides may be "0").
inline std::string check_argument(const std::string& prefix, size_t index, const runtime::DpsTensor& param,
                                  const std::string& data, const std::string& sizes = "0",
                                  const std::string& strides = "0") {
  std::string dims, vars;
  for (size_t d = 0; d < param.dims.size(); ++d) {
    dims += (d ? ", " : "") + std::to_string(param.dims[d]) + "LL";
    vars += (d ? ", " : "") + std::to_string(param.dim_vars[d]);
  }
  if (param.dims.empty()) dims = vars = "0";
  std::ostringstream c;
  c << "  {\n    static const int64_t dims[] = {" << dims << "};\n    static const int vars[] = {" << vars << "};\n"
    << "    if (" << prefix << "_tensor(" << index << ", args, codes, " << int(param.dtype.code) << ", "
    << int(param.dtype.bits) << ", \"" << param.dtype.to_string() << "\", " << param.dims.size()
    << ", dims, vars, var_names, values, bound, &" << data << ", " << sizes << ", " << strides
    << ")) return -1;\n  }\n";
  return c.str();
}

}  // namespace loom::dps_wrapper_c

#endif  // LOOM_DPS_WRAPPER_C_H_
