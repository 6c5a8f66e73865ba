// The runtime module kind "acme" and its loader: what an exported library
// with Acme code needs at run time, in the plugin acme_runtime (with the
// device, device.cc), which links the runtime library alone.
//
// The module is a runtime::KernelModuleNode (loom/runtime/kernel_module.h):
// the base keeps the kernel table (each function's name and argument
// kinds, its C symbol in attrs), checks every call's argument count, and
// saves the module, this kind's own fields (the C source and the object
// Acme's compiler made of it) included, through the object serializer; the
// loader is one line.  restore() links the object into a host library (on
// the board: loads it onto the DSP), and launch() calls a function there.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/library.h>

#include "acme.h"

namespace acme {

namespace {
class AcmeModuleNode : public loom::runtime::KernelModuleNode {
 public:
  std::string source;           // the C, for loomc inspect --source c
  loom::runtime::Bytes object;  // what Acme's compiler made of it

  AcmeModuleNode() { launch_dims = 0; }
  std::string type_key() const override { return "acme"; }
  std::string inspect_source(const std::string& format) const override {
    if (format == "c") return source;
    LOOM_THROW(Error) << "acme module: no source format '" << format << "' (it has: c)";
  }
  // Links the object (Acme's loader would put it on the DSP) and finds each
  // function in it.
  void restore() override {
    if (!object.defined()) LOOM_THROW(Error) << "acme module: no object code";
    loom::runtime::LinkedCode code{{{"acme_kernels.o", object.data()}}, {}};
    for (size_t k = 0; k < kernels.size(); ++k) {
      const loom::runtime::KernelNode& f = kernel(k);
      if (!f.attrs.contains("symbol")) LOOM_THROW(Error) << "acme module: function '" << f.name << "' has no symbol";
      code.functions.emplace_back(f.name, f.attrs.at("symbol").cast<std::string>());
    }
    library_ = loom::runtime::build_host_library(code, this);
    functions_.clear();
    for (size_t k = 0; k < kernels.size(); ++k) {
      std::optional<loom::Function> f = library_->function(kernel(k).name, loom::ObjectRef());
      if (!f) LOOM_THROW(Error) << "acme module: the object has no function '" << kernel(k).name << "'";
      functions_.push_back(*f);
    }
  }
  LOOM_OBJECT(AcmeModuleNode, loom::runtime::KernelModuleNode, "acme.Module");
  static void reflect(loom::ReflectionBuilder<AcmeModuleNode>& r) {
    r.field("source", &AcmeModuleNode::source, "the functions' C")
        .field("object", &AcmeModuleNode::object, "the object Acme's compiler made of it");
  }

 protected:
  void launch(size_t k, const loom::runtime::LaunchSizes&, const loom::Any* args) const override {
    functions_[k].call(args, static_cast<int32_t>(kernel(k).args.size()));
  }

 private:
  std::shared_ptr<loom::runtime::HostLibrary> library_;
  std::vector<loom::Function> functions_;  // by kernel index
};
}  // namespace

void register_runtime_module(loom::PluginContext& ctx) {
  loom::runtime::KernelModuleNode::register_loader<AcmeModuleNode>("acme");
  // What the codegen (plugin acme) hands over: the C, the object, and the
  // functions as runtime.Kernel objects (name, argument kinds, attrs
  // {symbol}).
  ctx.register_function(
      "acme.make_module",
      [](std::string source, std::string object, loom::Array functions) {
        auto node = loom::make_object<AcmeModuleNode>();
        node->source = std::move(source);
        node->object = loom::runtime::Bytes(std::move(object));
        node->kernels = std::move(functions);
        return loom::runtime::KernelModuleNode::finish(node);
      },
      "an acme module: (C source, object bytes, [runtime.Kernel...] with attrs {symbol})");
}

}  // namespace acme
