// DpsSignature and check_dps_arguments (loom/runtime/dps_signature.h).
#include "loom/runtime/dps_signature.h"

#include <sstream>

#include "loom/runtime/ndarray.h"
#include "loom/support/error.h"

namespace loom::runtime {

std::vector<const DLTensor*> array_arguments(const Any* args, int32_t count) {
  std::vector<const DLTensor*> out;
  for (int32_t i = 0; i < count; ++i) {
    const auto* array = args[i].object() ? args[i].as_object_ref().as<NDArrayNode>() : nullptr;
    out.push_back(array ? &array->dl_tensor() : nullptr);
  }
  return out;
}

std::string DpsSignature::serialize() const {
  // "DIMS n d1 ... PARAMS k dtype rank e1 ... ", a symbolic extent as ~index.
  std::ostringstream out;
  out << "DIMS " << dims.size();
  for (const std::string& d : dims) out << " " << d;
  out << " PARAMS " << params.size();
  for (const DpsTensor& p : params) {
    out << " " << p.dtype.to_string() << " " << p.dims.size();
    for (size_t k = 0; k < p.dims.size(); ++k) {
      if (p.dim_vars[k] >= 0) {
        out << " ~" << p.dim_vars[k];
      } else {
        out << " " << p.dims[k];
      }
    }
  }
  return out.str();
}

DpsSignature DpsSignature::parse(const std::string& text) {
  std::istringstream in(text);
  DpsSignature s;
  auto bad = [&] { LOOM_THROW(Error) << "a malformed dps signature: '" << text << "'"; };
  std::string word;
  size_t n = 0;
  if (!(in >> word >> n) || word != "DIMS" || n > 4096) bad();
  s.dims.resize(n);
  for (std::string& d : s.dims)
    if (!(in >> d)) bad();
  if (!(in >> word >> n) || word != "PARAMS" || n > 4096) bad();
  s.params.resize(n);
  for (DpsTensor& p : s.params) {
    size_t rank = 0;
    if (!(in >> word >> rank) || rank > 64) bad();
    try {
      p.dtype = DataType::parse(word);
    } catch (const Error&) {
      bad();
    }
    for (size_t k = 0; k < rank; ++k) {
      if (!(in >> word) || word.empty()) bad();
      try {
        if (word[0] == '~') {
          int var = std::stoi(word.substr(1));
          if (var < 0 || static_cast<size_t>(var) >= s.dims.size()) bad();
          p.dims.push_back(-1);
          p.dim_vars.push_back(var);
        } else {
          p.dims.push_back(std::stoll(word));
          p.dim_vars.push_back(-1);
        }
      } catch (const std::logic_error&) {
        bad();
      }
    }
  }
  return s;
}

std::vector<int64_t> check_dps_arguments(const DpsSignature& signature, const DLTensor* const* args, size_t count,
                                         const std::string& device_note) {
  if (count != signature.params.size()) {
    LOOM_THROW(TypeError) << "takes " << signature.params.size() << " tensors (inputs, then outputs), got " << count;
  }
  std::vector<int64_t> values(signature.dims.size(), 0);
  std::vector<bool> bound(signature.dims.size(), false);
  for (size_t i = 0; i < count; ++i) {
    const DLTensor* t = args[i];
    const DpsTensor& p = signature.params[i];
    if (!t) LOOM_THROW(TypeError) << "argument " << i << " must be a tensor";
    if (t->device.device_type != kDLCPU) {
      LOOM_THROW(Error) << "argument " << i << " is on device type " << t->device.device_type << "; " << device_note;
    }
    DataType got(static_cast<DataType::Code>(t->dtype.code), t->dtype.bits, t->dtype.lanes);
    if (got != p.dtype) {
      LOOM_THROW(TypeError) << "argument " << i << " has dtype " << got.to_string() << ", expected "
                            << p.dtype.to_string();
    }
    if (t->ndim != static_cast<int32_t>(p.dims.size())) {
      LOOM_THROW(TypeError) << "argument " << i << " has rank " << t->ndim << ", expected " << p.dims.size();
    }
    // A tensor with no elements is compact whatever its strides (PyTorch
    // gives a (0, 0) tensor strides (1, 1)).
    bool empty = false;
    for (int d = 0; d < t->ndim; ++d) empty = empty || t->shape[d] == 0;
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      int64_t extent = t->shape[d];
      int var = p.dim_vars[d];
      if (var < 0 && extent != p.dims[d]) {
        LOOM_THROW(TypeError) << "argument " << i << " has extent " << extent << " in dimension " << d << ", expected "
                              << p.dims[d];
      }
      if (var >= 0) {
        if (bound[var] && values[var] != extent) {
          LOOM_THROW(TypeError) << "argument " << i << " has extent " << extent << " in dimension " << d << ", but "
                                << signature.dims[var] << " is " << values[var] << " from an earlier argument";
        }
        bound[var] = true;
        values[var] = extent;
      }
      if (t->strides && extent != 1 && t->strides[d] != stride && !empty) {
        LOOM_THROW(Error) << "argument " << i << " is not compact (row-major)";
      }
      stride *= extent;
    }
  }
  return values;
}

}  // namespace loom::runtime
