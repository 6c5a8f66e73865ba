// libtorch behind torch_runner.h: the plugin's one translation unit that
// includes its headers.
#include "torch_runner.h"

#include <torch/script.h>

#include <loom/support/error.h>
#include <loom/support/strings.h>

#include <optional>
#include <sstream>

namespace loom::torchscript {

namespace {
// libtorch's message without its C++ backtrace.  An error inside a
// TorchScript method comes as "The following operation failed ...", the
// serialized code's traceback and, last, the error itself: that line
// first, then where in the method (the traceback's File line and the
// line marked HERE).
std::string reason(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  if (lines.empty()) return "an error without a message";
  if (lines[0].find("The following operation failed in the TorchScript interpreter") == std::string::npos) {
    if (lines.size() > 8) lines.resize(8);
    return join(lines, "\n");
  }
  std::string out = lines.back();
  for (size_t k = 1; k + 1 < lines.size(); ++k) {
    if (lines[k].find("File \"") != std::string::npos) {
      out += "\n" + lines[k];
      for (size_t j = k + 1; j + 1 < lines.size(); ++j) {
        if (lines[j + 1].find("<--- HERE") != std::string::npos) {
          out += "\n" + lines[j] + "\n" + lines[j + 1];
          break;
        }
      }
      break;
    }
  }
  return out;
}

std::optional<DataType> dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
      return DataType::Float(32);
    case c10::kDouble:
      return DataType::Float(64);
    case c10::kHalf:
      return DataType::Float(16);
    case c10::kBFloat16:
      return DataType(DataType::kBFloat, 16);
    case c10::kChar:
      return DataType::Int(8);
    case c10::kShort:
      return DataType::Int(16);
    case c10::kInt:
      return DataType::Int(32);
    case c10::kLong:
      return DataType::Int(64);
    case c10::kByte:
      return DataType::UInt(8);
    case c10::kBool:
      return DataType(DataType::kBool, 8);
    default:
      return std::nullopt;
  }
}

c10::ScalarType scalar_type(const DLDataType& t) {
  DataType d(static_cast<DataType::Code>(t.code), t.bits, t.lanes);
  for (c10::ScalarType s : {c10::kFloat, c10::kDouble, c10::kHalf, c10::kBFloat16, c10::kChar, c10::kShort, c10::kInt,
                            c10::kLong, c10::kByte, c10::kBool}) {
    if (dtype_of(s) == d) return s;
  }
  LOOM_THROW(TypeError) << "libtorch has no tensor type for " << d.to_string();
}

// A torch tensor over `t`'s memory: no copy, not owned.
at::Tensor view_of(const DLTensor* t) {
  std::vector<int64_t> sizes(t->shape, t->shape + t->ndim);
  void* data = static_cast<char*>(t->data) + t->byte_offset;
  return at::from_blob(data, sizes, at::TensorOptions().dtype(scalar_type(t->dtype)).device(at::kCPU));
}

SchemaValue describe(const c10::TypePtr& type, std::string name) {
  SchemaValue v;
  v.name = std::move(name);
  v.type = type->annotation_str();
  v.tensor = type->cast<c10::TensorType>() != nullptr;
  return v;
}
}  // namespace

struct Script::Impl {
  torch::jit::Module module;
};

Script::Script(const std::string& bytes) : impl_(std::make_unique<Impl>()) {
  std::istringstream in(bytes);
  try {
    impl_->module = torch::jit::load(in, c10::Device(c10::kCPU));
    impl_->module.eval();
  } catch (const std::exception& e) {
    LOOM_THROW(Error) << "the payload is not a TorchScript module libtorch loads: " << reason(e);
  }
}

Script::~Script() = default;

std::vector<std::string> Script::method_names() const {
  std::vector<std::string> out;
  for (const auto& m : impl_->module.get_methods()) out.push_back(m.name());
  return out;
}

Schema Script::schema(const std::string& method) const {
  auto found = impl_->module.find_method(method);
  if (!found) {
    std::vector<std::string> names = method_names();
    LOOM_THROW(Error) << "the TorchScript module has no method '" << method << "' (it has: " << join(names, ", ") << ")"
                      << did_you_mean(method, names);
  }
  // A saved module's schema has no dtypes or shapes (Tensor), so those are
  // checked at each call.
  const c10::FunctionSchema& s = found->function().getSchema();
  Schema out;
  for (size_t k = 1; k < s.arguments().size(); ++k) {  // 0 is self
    out.arguments.push_back(describe(s.arguments()[k].type(), s.arguments()[k].name()));
  }
  for (const c10::Argument& r : s.returns()) {
    if (auto tuple = r.type()->cast<c10::TupleType>()) {
      for (const c10::TypePtr& field : tuple->elements()) out.results.push_back(describe(field, ""));
    } else {
      out.results.push_back(describe(r.type(), ""));
    }
  }
  return out;
}

void Script::run(const std::string& method, const std::vector<const DLTensor*>& inputs,
                 const std::vector<const DLTensor*>& outputs) const {
  c10::InferenceMode inference;
  std::vector<c10::IValue> args;
  args.reserve(inputs.size());
  for (const DLTensor* t : inputs) args.emplace_back(view_of(t));
  c10::IValue result;
  try {
    result = impl_->module.get_method(method)(std::move(args));
  } catch (const std::exception& e) {
    LOOM_THROW(Error) << "libtorch: " << reason(e);
  }
  std::vector<c10::IValue> results;
  if (result.isTuple()) {
    for (const c10::IValue& v : result.toTupleRef().elements()) results.push_back(v);
  } else {
    results.push_back(result);
  }
  if (results.size() != outputs.size()) {
    LOOM_THROW(Error) << "the method returned " << results.size() << " values for " << outputs.size() << " outputs";
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!results[k].isTensor()) {
      LOOM_THROW(TypeError) << "output " << k << ": the method returned " << results[k].tagKind() << ", not a tensor";
    }
    const at::Tensor& got = results[k].toTensor();
    at::Tensor out = view_of(outputs[k]);
    if (got.scalar_type() != out.scalar_type() || got.sizes() != out.sizes()) {
      std::ostringstream have, want;
      have << got.scalar_type() << got.sizes();
      want << out.scalar_type() << out.sizes();
      LOOM_THROW(TypeError) << "output " << k << ": the method returned " << have.str() << ", but the output is "
                            << want.str();
    }
    out.copy_(got);
  }
}

}  // namespace loom::torchscript
