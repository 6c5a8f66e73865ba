// The torchscript plugin (docs/extern-torchscript.md): the extern kind
// `torchscript`, a serialized TorchScript module inside an IRModule, run by
// libtorch; and the runtime module `torchscript` that runs it, exported
// and loaded like any other.  libtorch is reached through torch_runner.h
// only; this file does not include its headers.
#include <loom/tir/dps_signature.h>
#include <loom/ir/op.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/module.h>
#include <loom/runtime/ndarray.h>
#include <loom/support/bytes.h>
#include <loom/support/json.h>
#include <loom/support/strings.h>
#include <loom/target/target.h>

#include <map>
#include <mutex>

#include "torch_runner.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::ir::IRModule;
using loom::torchscript::Schema;
using loom::torchscript::Script;

constexpr const char* kNoun = "a torchscript function";
constexpr const char* kMagic = "LOOMTS1";

// A torchscript function, read and checked from its ir.ExternFunc.
struct Spec {
  std::string name;
  std::string method = "forward";
  std::string payload;  // torch.jit.save's bytes
  loom::runtime::DpsSignature signature;
  size_t inputs = 0;  // the first `inputs` parameters; the rest are outputs
};

// The function's attributes, payload and signature (no libtorch yet).
// Errors do not repeat the function's name (well-formedness adds it).
Spec read_spec(const loom::ir::ExternFuncNode& f, const std::string& name) {
  Spec spec;
  spec.name = name;
  spec.signature = loom::tir::read_dps_signature(f, kNoun, "(inputs, then outputs)");
  for (const auto& [key, value] : f.attrs->items) {
    if (key != "method") {
      LOOM_THROW(Error) << "a torchscript function has no attribute '" << key << "' (it has method)"
                        << loom::did_you_mean(key, {"method"});
    }
    if (value.kind() != loom::AnyKind::kStr) LOOM_THROW(Error) << "the attribute method must be a string";
    spec.method = value.as_string();
  }
  if (f.encoding != "base64") {
    LOOM_THROW(Error) << "a torchscript function's payload is a serialized module (torch.jit.save's bytes), written "
                      << "encoding \"base64\", not " << f.encoding;
  }
  try {
    spec.payload = loom::base64_decode(f.payload);
  } catch (const Error& e) {
    LOOM_THROW(Error) << "its payload is not base64: " << e.what();
  }
  return spec;
}

std::string plural(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// The method's schema against the declared signature: tensors only, and as
// many inputs and outputs (a saved module's schema says no more: dtypes
// and shapes are checked at each call).  Fills spec.inputs.
void check_schema(Spec& spec, const Schema& schema) {
  auto refuse_non_tensor = [&](const loom::torchscript::SchemaValue& v, const std::string& what) {
    if (!v.tensor) {
      LOOM_THROW(Error) << "the method " << spec.method << " " << what << " of type " << v.type
                        << "; a torchscript function exchanges tensors only";
    }
  };
  for (const auto& a : schema.arguments) refuse_non_tensor(a, "takes the argument '" + a.name + "'");
  for (size_t k = 0; k < schema.results.size(); ++k)
    refuse_non_tensor(schema.results[k], "returns result " + std::to_string(k));
  size_t params = spec.signature.params.size();
  if (schema.arguments.size() + schema.results.size() != params || schema.results.empty()) {
    LOOM_THROW(Error) << "the method " << spec.method << " takes " << plural(schema.arguments.size(), "tensor")
                      << " and returns " << schema.results.size() << ", but the signature declares "
                      << plural(params, "tensor") << " (inputs, then outputs)";
  }
  spec.inputs = schema.arguments.size();
}

// Checked function: spec read, module loaded, schema compared.
Spec checked(const loom::ir::ExternFuncNode& f, const std::string& name) {
  Spec spec = read_spec(f, name);
  check_schema(spec, Script(spec.payload).schema(spec.method));
  return spec;
}

class TorchScriptModuleNode : public loom::runtime::ModuleNode {
 public:
  std::vector<Spec> functions;

  std::string type_key() const override { return "torchscript"; }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const Spec& f : functions) out.push_back(f.name);
    return out;
  }
  std::optional<Function> own_function(const std::string& name) const override {
    for (size_t k = 0; k < functions.size(); ++k) {
      if (functions[k].name != name) continue;
      loom::ObjectRef self(loom::ObjectPtr<loom::Object>(const_cast<TorchScriptModuleNode*>(this)));
      return Function(
          [self, k](const Any* args, int32_t count) -> Any {
            static_cast<const TorchScriptModuleNode*>(self.get())->call(k, args, count);
            return Any();
          },
          name);
    }
    return std::nullopt;
  }
  std::string save_to_binary() const override {
    std::string out = kMagic;
    loom::put_field(out, std::to_string(functions.size()));
    for (const Spec& f : functions) {
      loom::put_field(out, f.name);
      loom::put_field(out, f.method);
      loom::put_field(out, std::to_string(f.inputs));
      loom::put_field(out, f.signature.serialize());
      loom::put_field(out, f.payload);
    }
    return out;
  }
  std::string inspect_source(const std::string& format) const override {
    if (format != "torchscript")
      LOOM_THROW(Error) << "torchscript module: no source format '" << format << "' (it has: torchscript)";
    std::string out;
    for (size_t k = 0; k < functions.size(); ++k) {
      const Spec& f = functions[k];
      out += "# @" + f.name + ": method " + f.method + ", " + plural(f.inputs, "input") + ", " +
             plural(f.signature.params.size() - f.inputs, "output") + ", " + std::to_string(f.payload.size()) +
             " bytes of torch.jit.save\n";
    }
    return out;
  }
  LOOM_OBJECT(TorchScriptModuleNode, loom::runtime::ModuleNode, "torchscript.Module");

 private:
  // The loaded module of function k, on its first call.
  const Script& script(size_t k) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (scripts_.size() < functions.size()) scripts_.resize(functions.size());
    if (!scripts_[k]) scripts_[k] = std::make_shared<Script>(functions[k].payload);
    return *scripts_[k];
  }

  void call(size_t k, const Any* args, int32_t count) const {
    const Spec& f = functions[k];
    try {
      std::vector<const DLTensor*> tensors = loom::runtime::array_arguments(args, count);
      loom::runtime::check_dps_arguments(f.signature, tensors.data(), tensors.size(),
                                         "libtorch runs a torchscript function on the CPU");
      std::vector<const DLTensor*> inputs(tensors.begin(), tensors.begin() + f.inputs);
      std::vector<const DLTensor*> outputs(tensors.begin() + f.inputs, tensors.end());
      script(k).run(f.method, inputs, outputs);
    } catch (const Error& e) {
      LOOM_THROW(Error) << "@" << f.name << ": " << e.what();
    }
  }

  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Script>> scripts_;
};

loom::runtime::Module make_module(std::vector<Spec> functions) {
  auto node = loom::make_object<TorchScriptModuleNode>();
  node->functions = std::move(functions);
  return loom::runtime::Module(node);
}

loom::runtime::Module build(const IRModule& module, const loom::target::Target&) {
  std::vector<Spec> functions;
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<loom::ir::ExternFuncNode>();
    if (!f || f->kind != "torchscript") continue;
    try {
      functions.push_back(checked(*f, name));
    } catch (const Error& e) {
      LOOM_THROW(Error) << "torchscript: @" << name << ": " << e.what();
    }
  }
  return make_module(std::move(functions));
}

loom::runtime::Module load(const std::string& bytes) {
  std::string_view in(bytes);
  auto bad = [] { LOOM_THROW(Error) << "torchscript module: malformed bytes"; };
  if (in.substr(0, std::strlen(kMagic)) != kMagic) bad();
  size_t at = std::strlen(kMagic);
  std::string field;
  if (!loom::take_field(in, at, field)) bad();
  size_t n = 0;
  try {
    n = std::stoul(field);
  } catch (const std::logic_error&) {
    bad();
  }
  std::vector<Spec> functions;
  for (size_t k = 0; k < n; ++k) {
    Spec f;
    std::string inputs, signature;
    if (!loom::take_field(in, at, f.name) || !loom::take_field(in, at, f.method) || !loom::take_field(in, at, inputs) ||
        !loom::take_field(in, at, signature) || !loom::take_field(in, at, f.payload)) {
      bad();
    }
    f.signature = loom::runtime::DpsSignature::parse(signature);
    try {
      f.inputs = std::stoul(inputs);
    } catch (const std::logic_error&) {
      bad();
    }
    if (f.inputs > f.signature.params.size()) bad();
    functions.push_back(std::move(f));
  }
  return make_module(std::move(functions));
}

void validate(const loom::ObjectRef& function, const std::string& name) {
  const auto* f = function.as<loom::ir::ExternFuncNode>();
  if (!f) LOOM_THROW(Error) << "not an extern function";
  checked(*f, name);
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("torchscript") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "Extern kind torchscript: serialized TorchScript modules run by libtorch "
    "(CPU), called through call_dps"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<TorchScriptModuleNode>();
  loom::ir::ExternKindRegistry::register_kind(
      "torchscript",
      Function::typed([](loom::ObjectRef f, std::string name) { validate(f, name); }, "torchscript.validate"),
      "a TorchScript module (torch.jit.save's bytes, base64) run by libtorch, called through call_dps; attr method",
      Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                      "torchscript.build"));
  loom::runtime::ModuleLoaderRegistry::register_loader(
      "torchscript", Function::typed([](std::string bytes) { return load(bytes); }, "torchscript.load"));
}
