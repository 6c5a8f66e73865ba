// The torchscript plugin's compiler half (docs/extern-torchscript.md): the
// extern kind `torchscript`, a serialized TorchScript module inside an
// IRModule, checked against its signature and handed to the runtime half
// (plugin torchscript_runtime: torchscript_runtime_plugin.cc), whose module
// runs it with libtorch and is exported and loaded like any other.
// libtorch is reached through torch_runner.h only; this file does not
// include its headers.
#include <loom/tir/dps_signature.h>
#include <loom/ir/op.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>
#include <loom/runtime/ndarray.h>
#include <loom/support/bytes.h>
#include <loom/support/json.h>
#include <loom/support/strings.h>
#include <loom/target/target.h>

#include "torch_runner.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::ir::IRModule;
using loom::torchscript::Schema;
using loom::torchscript::Script;

constexpr const char* kNoun = "a torchscript function";

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

loom::runtime::Module build(const IRModule& module, const loom::target::Target&) {
  std::vector<Any> functions;
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<loom::ir::ExternFuncNode>();
    if (!f || f->kind != "torchscript") continue;
    try {
      Spec spec = checked(*f, name);
      std::vector<std::string> args(spec.signature.params.size(), "buffer");
      loom::Map attrs{{"method", Any(spec.method)},
                      {"inputs", Any(static_cast<int64_t>(spec.inputs))},
                      {"signature", Any(spec.signature.serialize())}};
      functions.emplace_back(
          loom::runtime::Kernel(name, args, "", loom::runtime::Bytes(std::move(spec.payload)), std::move(attrs)));
    } catch (const Error& e) {
      LOOM_THROW(Error) << "torchscript: @" << name << ": " << e.what();
    }
  }
  return loom::FunctionRegistry::get("torchscript.make_module")(loom::Array(functions)).cast<loom::runtime::Module>();
}

void validate(const loom::ObjectRef& function, const std::string& name) {
  const auto* f = function.as<loom::ir::ExternFuncNode>();
  if (!f) LOOM_THROW(Error) << "not an extern function";
  checked(*f, name);
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("torchscript") LOOM_PLUGIN_VERSION("0.2.0") LOOM_PLUGIN_DESCRIPTION(
    "Extern kind torchscript: serialized TorchScript modules run by libtorch "
    "(CPU), called through call_dps; its runtime is the plugin torchscript_runtime")
                         LOOM_PLUGIN_REQUIRES("torchscript_runtime"));

LOOM_PLUGIN_INIT(ctx) {
  loom::ir::ExternKindRegistry::register_kind(
      "torchscript",
      Function::typed([](loom::ObjectRef f, std::string name) { validate(f, name); }, "torchscript.validate"),
      "a TorchScript module (torch.jit.save's bytes, base64) run by libtorch, called through call_dps; attr method",
      Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                      "torchscript.build"));
}
