// The torchscript plugin's runtime half (docs/extern-torchscript.md, "Two
// plugins"): the runtime module torchscript (a runtime::KernelModuleNode:
// each function is a kernel whose binary is torch.jit.save's bytes, with
// its method, input count and DPS signature in attrs) and its loader; it
// runs the modules with libtorch and links libloom_runtime, not the
// compiler.  The compiler half (plugin torchscript) hands its functions
// over through torchscript.make_module.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/dps_signature.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>
#include <loom/runtime/ndarray.h>

#include <memory>
#include <mutex>

#include "torch_runner.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::torchscript::Script;

std::string plural(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// What a function's attrs say, read once when the module is made or loaded.
struct Call {
  std::string method;
  size_t inputs = 0;  // the first `inputs` parameters; the rest are outputs
  loom::runtime::DpsSignature signature;
};

class TorchScriptModuleNode : public loom::runtime::KernelModuleNode {
 public:
  TorchScriptModuleNode() { launch_dims = 0; }
  std::string type_key() const override { return "torchscript"; }
  std::string inspect_source(const std::string& format) const override {
    if (format != "torchscript")
      LOOM_THROW(Error) << "torchscript module: no source format '" << format << "' (it has: torchscript)";
    std::string out;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const Call& c = calls_[k];
      out += "# @" + kernel(k).name + ": method " + c.method + ", " + plural(c.inputs, "input") + ", " +
             plural(c.signature.params.size() - c.inputs, "output") + ", " +
             std::to_string(kernel(k).binary.data().size()) + " bytes of torch.jit.save\n";
    }
    return out;
  }
  // Each function's method, input count and signature read and checked;
  // its TorchScript module is loaded at its first call.
  void restore() override {
    calls_.clear();
    for (size_t k = 0; k < kernels.size(); ++k) {
      const loom::runtime::KernelNode& f = kernel(k);
      try {
        if (!f.binary.defined()) LOOM_THROW(Error) << "no serialized module";
        Call c;
        c.method = f.attrs.at("method").cast<std::string>();
        c.signature = loom::runtime::DpsSignature::parse(f.attrs.at("signature").cast<std::string>());
        int64_t inputs = f.attrs.at("inputs").as_int();
        if (inputs < 0 || static_cast<size_t>(inputs) > c.signature.params.size() ||
            c.signature.params.size() != f.args.size()) {
          LOOM_THROW(Error) << inputs << " inputs and " << f.args.size() << " arguments do not fit a signature of "
                            << c.signature.params.size() << " tensors";
        }
        c.inputs = static_cast<size_t>(inputs);
        calls_.push_back(std::move(c));
      } catch (const Error& e) {
        LOOM_THROW(Error) << "torchscript module: @" << f.name << ": " << e.what();
      }
    }
    scripts_.assign(kernels.size(), nullptr);
  }
  LOOM_OBJECT(TorchScriptModuleNode, loom::runtime::KernelModuleNode, "torchscript.Module");

 protected:
  void launch(size_t k, const loom::runtime::LaunchSizes&, const Any* args) const override {
    const Call& c = calls_[k];
    try {
      int32_t count = static_cast<int32_t>(kernel(k).args.size());
      std::vector<const DLTensor*> tensors = loom::runtime::array_arguments(args, count);
      loom::runtime::check_dps_arguments(c.signature, tensors.data(), tensors.size(),
                                         "libtorch runs a torchscript function on the CPU");
      std::vector<const DLTensor*> inputs(tensors.begin(), tensors.begin() + c.inputs);
      std::vector<const DLTensor*> outputs(tensors.begin() + c.inputs, tensors.end());
      script(k).run(c.method, inputs, outputs);
    } catch (const Error& e) {
      LOOM_THROW(Error) << "@" << kernel(k).name << ": " << e.what();
    }
  }

 private:
  // The loaded module of function k, on its first call.
  const Script& script(size_t k) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!scripts_[k]) scripts_[k] = std::make_shared<Script>(kernel(k).binary.data());
    return *scripts_[k];
  }

  std::vector<Call> calls_;  // by kernel index
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Script>> scripts_;
};

}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("torchscript_runtime") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("TorchScript's runtime half: the runtime module torchscript and its "
                                                 "loader, run by libtorch (CPU)"));

LOOM_PLUGIN_INIT(ctx) {
  loom::runtime::KernelModuleNode::register_loader<TorchScriptModuleNode>("torchscript");
  ctx.register_function(
      "torchscript.make_module",
      [](loom::Array functions) {
        auto node = loom::make_object<TorchScriptModuleNode>();
        node->kernels = std::move(functions);
        return loom::runtime::KernelModuleNode::finish(node);
      },
      "a torchscript module of functions: [runtime.Kernel...], each with torch.jit.save's bytes as binary and "
      "method, inputs, signature in attrs");
}
