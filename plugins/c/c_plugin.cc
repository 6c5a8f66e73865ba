// The c plugin (docs/target-c.md): target kind `c`, whose codegen prints
// prim functions as C99 with the SDK's CSourcePrinter and compiles them
// with the system C compiler ($CC, else `cc`) into an object.  A build
// links that object into a private library and runs it at once; the same
// object is what export_library links into a shared library, so both
// paths run the same machine code.
#include <loom/plugin_sdk.h>
#include <loom/runtime/library.h>
#include <loom/runtime/module.h>
#include <loom/runtime/thread_pool.h>
#include <loom/support/strings.h>
#include <loom/target/c_source.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

namespace {
using loom::Function;
using loom::Map;
using loom::ir::IRModule;

class CModuleNode : public loom::runtime::HostCodeModuleNode {
 public:
  std::string source;  // the generated C
  std::string object;  // compiled, as export links it

  std::string type_key() const override { return "c"; }
  std::optional<loom::runtime::LinkedCode> linked_code() const override {
    return loom::runtime::LinkedCode{{{"c_kernels.o", object}}, functions};
  }
  std::string inspect_source(const std::string& format) const override {
    if (format == "c") return source;
    LOOM_THROW(Error) << "c module: no source format '" << format << "' (it has: c)";
  }
  LOOM_OBJECT(CModuleNode, loom::runtime::HostCodeModuleNode, "c.Module");
};

// The compiler flags: the language and semantics the printer relies on
// (C99; integer overflow wraps, as in the IR), then the target's cflags.
std::vector<std::string> compiler_flags(const Map& attrs) {
  std::vector<std::string> flags{"-std=c99", "-fwrapv"};
  for (const std::string& f : loom::split(attrs.at("cflags").as_string(), ' ')) {
    if (f == "-c" || f == "-o" || f == "-shared" || f == "-E" || f == "-S") {
      LOOM_THROW(Error) << "target c: cflags may not contain '" << f
                        << "' (the codegen chooses what the compiler writes)";
    }
    flags.push_back(f);
  }
  return flags;
}

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  auto node = loom::make_object<CModuleNode>();
  loom::target::CSourcePrinter printer;
  node->source = printer.print_host_module(module, &node->functions);
  try {
    node->object = loom::runtime::compile_c_object("c_kernels.c", node->source, compiler_flags(target->attrs));
  } catch (const loom::Error& e) {
    LOOM_THROW(Error) << "target c: " << e.what();
  }
  node->library = loom::runtime::build_host_library(*node->linked_code(), node.get());
  return loom::runtime::Module(node);
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("c") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "C source codegen: target kind c, C99 compiled with the system compiler"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<CModuleNode>();
  loom::target::TargetTraits traits;
  traits.vector_bits = [](const loom::target::Target&) -> int64_t { return 0; };  // scalar C
  traits.native_intrinsics = loom::target::CSourcePrinter::intrinsics();
  traits.threads_attr = "num-threads";
  traits.default_pipeline = {"cpu"};
  traits.codegen_needs = {"intrinsics_lowered"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("c")
          .attrs(
              {{"cflags", "str", std::string("-O2"), "flags for the C compiler ($CC, else cc), after -std=c99 -fwrapv"},
               loom::SchemaField{"num-threads", "int", int64_t{0}, "threads for parallel loops; 0: one per core"}
                   .between(0, loom::runtime::kMaxThreads)})
          .validate(Function::typed([](Map attrs) { compiler_flags(attrs); }, "c.validate_target"))
          .doc("C99 source compiled with the system C compiler: portable, readable, the base of C-dialect backends")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "c",
      Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); }, "c.codegen"));
}
