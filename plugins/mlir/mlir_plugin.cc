// The mlir plugin (docs/extern-mlir.md): the extern kind `mlir`, a kernel
// written in MLIR (func, arith, math, linalg, tensor, scf, memref) inside an
// IRModule.
//
// Validation (at well-formedness time) parses and verifies the payload with
// MLIR 16 in this process, nothing run, and checks its one public function
// against the extern's declared tensors (compiler.h).  The build (the
// kind's builder, called by driver::build_kernels) compiles each function
// in process (bufferization, the lowering to the LLVM dialect, LLVM IR, an
// object) and generates C wrappers that check the DLTensor arguments, fill
// one memref descriptor per tensor and call the function's
// `_mlir_ciface_` entry, which writes the outputs in place.  Objects and
// wrappers are host code: linked into a private library to run in memory
// and into an exported library by export_library, so a loaded library
// needs neither MLIR nor this plugin.
#include <loom/dps_wrapper_c.h>
#include <loom/ir/diagnostic.h>
#include <loom/ir/op.h>
#include <loom/ir/text.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/library.h>
#include <loom/runtime/module.h>
#include <loom/support/strings.h>
#include <loom/target/target.h>
#include <loom/text/text.h>
#include <loom/tir/dps_signature.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "compiler.h"

namespace {
using loom::Any;
using loom::Error;
using loom::Function;
using loom::Map;
using loom::ir::IRModule;
namespace kind = loom::mlir_kind;

const std::vector<std::string>& attribute_names() {
  static const std::vector<std::string> names = {"opt_level"};
  return names;
}

// An mlir function, read from its ir.ExternFunc.
struct Spec {
  std::string name;   // the IR function's global name
  std::string entry;  // the C interface's function: _mlir_ciface_<entry>
  int opt_level = 3;  // LLVM's optimisation of the lowered code
  loom::runtime::DpsSignature signature;
  std::vector<kind::Param> params;
  std::string text;
  // The IR function, alive while the spec is used: where its payload was
  // parsed from, for diagnostics.
  const loom::ir::ExternFuncNode* function = nullptr;

  // "FILE:LINE:COL: " of a line and column of the payload when the module
  // was parsed from text, else "".
  std::string position(int line, int column) const {
    std::string at = function ? loom::text::payload_position(*function, line, column) : "";
    return at.empty() ? at : at + ": ";
  }
};

// Throws Error with a message that does not repeat the function's name
// (well-formedness diagnostics add it).
Spec read_spec(const loom::ir::ExternFuncNode& f, const std::string& name) {
  Spec spec;
  spec.name = name;
  spec.text = f.payload;
  spec.function = &f;
  spec.signature = loom::tir::read_dps_signature(
      f, "an mlir function", "(memref descriptors), and its symbolic dimensions are the payload's ? extents");
  if (f.encoding != "text") LOOM_THROW(Error) << "an mlir function's payload is MLIR text, not " << f.encoding;
  for (const auto& [key, value] : f.attrs->items) {
    if (std::find(attribute_names().begin(), attribute_names().end(), key) == attribute_names().end()) {
      LOOM_THROW(Error) << "an mlir function has no attribute '" << key << "' (it has "
                        << loom::join(attribute_names(), ", ") << ")" << loom::did_you_mean(key, attribute_names());
    }
  }
  if (f.attrs.contains("opt_level")) {
    const Any& level = f.attrs.at("opt_level");
    if (level.kind() != loom::AnyKind::kInt || level.as_int() < 0 || level.as_int() > 3)
      LOOM_THROW(Error) << "the attribute opt_level must be an integer from 0 to 3 (LLVM's -O level)";
    spec.opt_level = static_cast<int>(level.as_int());
  }
  if (!loom::is_c_identifier(name)) {
    LOOM_THROW(Error) << "the function's name '" << name << "' is not a C identifier (it names the entry symbol)";
  }
  spec.entry = "__loom_mlir_" + name;
  const auto* type = f.signature.get();
  for (size_t i = 0; i < spec.signature.params.size(); ++i) {
    const loom::runtime::DpsTensor& t = spec.signature.params[i];
    kind::Param p;
    p.code = t.dtype.code;
    p.bits = t.dtype.bits;
    p.dtype = t.dtype.to_string();
    p.dims = t.dims;
    p.declared = loom::ir::to_text(type->params->items[i]);
    spec.params.push_back(std::move(p));
  }
  return spec;
}

std::string describe(const Spec& spec, const std::vector<kind::Problem>& problems) {
  std::ostringstream s;
  size_t shown = std::min<size_t>(problems.size(), 5);
  for (size_t k = 0; k < shown; ++k) {
    const kind::Problem& p = problems[k];
    s << "\n    ";
    if (p.line > 0) s << spec.position(p.line, p.column) << "mlir line " << p.line << ":" << p.column << ": ";
    s << p.message;
    if (!p.source_line.empty()) s << "\n        " << p.source_line;
  }
  if (problems.size() > shown) s << "\n    (" << problems.size() - shown << " more)";
  return s.str();
}

void check_payload(const Spec& spec) {
  kind::Checked checked = kind::check(spec.text, spec.params);
  if (!checked.problems.empty())
    LOOM_THROW(Error) << "the MLIR payload is not valid:" << describe(spec, checked.problems);
}

// ---- the build ---------------------------------------------------------------

// The machine that runs the module's host code: the module's host target
// when it has one, else the target; its mtriple, mcpu and mattr when its
// kind has them, else this machine.
kind::Machine machine_of(const loom::target::Target& target) {
  const Map& attrs = target->attrs;
  auto text = [&](const char* key) { return attrs.contains(key) ? attrs.at(key).as_string() : std::string(); };
  kind::Machine here = kind::host_machine();
  kind::Machine m = here;
  if (!text("mtriple").empty() && text("mtriple") != here.triple) {
    LOOM_THROW(Error) << "mlir: the target's mtriple '" << text("mtriple")
                      << "' is not this machine's; the mlir kind compiles for the machine it runs on (" << here.triple
                      << ")";
  }
  std::string cpu = text("mcpu");
  if (!cpu.empty() && cpu != "native") {
    if (!kind::is_known_cpu(m.triple, cpu))
      LOOM_THROW(Error) << "mlir: the target's mcpu '" << cpu << "' is not a CPU LLVM knows for " << m.triple;
    m.cpu = cpu;
    m.features.clear();
  }
  std::string mattr = text("mattr");
  if (!mattr.empty()) m.features += (m.features.empty() ? "" : ",") + mattr;
  return m;
}

std::string call_symbol(const Spec& spec) { return "__loom_mlir_call_" + spec.name; }

// The C wrappers: one LoomBackendFunc per function, checking each DLTensor
// (type code, device, dtype, rank, extents, compact strides), binding the
// symbolic dimensions and filling a memref descriptor for it, then calling
// the entry's C interface.
std::string wrappers(const std::vector<Spec>& specs) {
  std::ostringstream c;
  c << R"(/* Generated by Loom's mlir plugin (docs/extern-mlir.md): LoomBackendFunc
 * wrappers (loom/runtime/c_backend_api.h) around MLIR functions' C interfaces. */
#include <stdio.h>
#include "loom/runtime/c_backend_api.h"
extern const LoomHostApi* __loom_host_api;
)"
    << loom::dps_wrapper_c::checker("loom_mlir", "MLIR host code reads CPU memory",
                                    "the mlir kind needs compact tensors");
  std::set<size_t> ranks;
  for (const Spec& spec : specs)
    for (const auto& p : spec.signature.params) ranks.insert(p.dims.size());
  for (size_t r : ranks) {
    c << "\ntypedef struct { void* allocated; void* aligned; int64_t offset;";
    if (r > 0) c << " int64_t sizes[" << r << "]; int64_t strides[" << r << "];";
    c << " } loom_mlir_memref_" << r << ";\n";
  }
  for (const Spec& spec : specs) {
    size_t n = spec.signature.params.size();
    c << "\n/* @" << spec.name << " */\n";
    c << "extern int32_t _mlir_ciface_" << spec.entry << "(";
    for (size_t i = 0; i < n; ++i)
      c << (i ? ", " : "") << "loom_mlir_memref_" << spec.signature.params[i].dims.size() << "*";
    if (n == 0) c << "void";
    c << ");\n";
    c << "int32_t " << call_symbol(spec)
      << "(const LoomValue* args, const int32_t* codes, int32_t num_args, LoomValue* ret, int32_t* ret_code, "
         "void* resource) {\n";
    c << loom::dps_wrapper_c::prologue("loom_mlir", spec.signature);
    for (size_t i = 0; i < n; ++i) {
      const loom::runtime::DpsTensor& p = spec.signature.params[i];
      std::string m = "m" + std::to_string(i);
      bool scalar = p.dims.empty();
      c << "  loom_mlir_memref_" << p.dims.size() << " " << m << ";\n"
        << loom::dps_wrapper_c::check_argument("loom_mlir", i, p, m + ".aligned", scalar ? "0" : m + ".sizes",
                                               scalar ? "0" : m + ".strides")
        << "  " << m << ".allocated = " << m << ".aligned;\n  " << m << ".offset = 0;\n";
    }
    c << "  if (_mlir_ciface_" << spec.entry << "(";
    for (size_t i = 0; i < n; ++i) c << (i ? ", " : "") << "&m" << i;
    c << "))\n    return loom_mlir_fail(\"" << spec.name
      << ": a result of the MLIR function does not have the shape of its output\");\n";
    c << "  *ret_code = 0;\n  return 0;\n}\n";
  }
  return c.str();
}

class MlirModuleNode : public loom::runtime::HostCodeModuleNode {
 public:
  std::vector<std::pair<std::string, std::string>> objects;  // (file name, ELF object)
  std::map<std::string, std::string> payloads;               // name -> MLIR text
  std::map<std::string, std::string> bufferized;             // name -> MLIR after bufferization
  std::map<std::string, std::string> llvm_ir;                // name -> optimised LLVM IR
  std::map<std::string, double> compile_seconds;             // name -> wall time of its compilation
  std::string wrapper_source;

  std::string type_key() const override { return "mlir"; }
  std::optional<loom::runtime::LinkedCode> linked_code() const override {
    loom::runtime::LinkedCode code{objects, functions};
    code.files.emplace_back("mlir_wrappers.c", wrapper_source);
    return code;
  }
  std::string inspect_source(const std::string& format) const override {
    auto joined = [](const std::map<std::string, std::string>& texts, const char* comment) {
      std::string out;
      for (const auto& [name, text] : texts)
        out += std::string(comment) + " @" + name + "\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n");
      return out;
    };
    if (format == "mlir") return joined(payloads, "//");
    if (format == "bufferized") return joined(bufferized, "//");
    if (format == "ll") return joined(llvm_ir, ";");
    if (format == "c") return wrapper_source;
    LOOM_THROW(Error) << "mlir module: no source format '" << format << "' (it has: mlir, bufferized, ll, c)";
  }
  LOOM_OBJECT(MlirModuleNode, loom::runtime::HostCodeModuleNode, "mlir.Module");
};

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  // The host target runs extern code when the module names one.
  loom::target::Target runs_on = target;
  if (module->attrs.contains("host")) {
    const Any& host = module->attrs.at("host");
    if (host.object() && host.object()->is_instance<loom::target::TargetNode>())
      runs_on = host.cast<loom::target::Target>();
  }
  kind::Machine machine = machine_of(runs_on);
  auto node = loom::make_object<MlirModuleNode>();
  std::vector<Spec> specs;
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<loom::ir::ExternFuncNode>();
    if (!f) LOOM_THROW(Error) << "mlir: @" << name << " is not an extern function";
    try {
      Spec spec = read_spec(*f, name);
      kind::Compiled compiled = kind::compile(spec.text, spec.params, spec.entry, machine, spec.opt_level);
      if (!compiled.problems.empty())
        LOOM_THROW(Error) << "the MLIR payload does not compile:" << describe(spec, compiled.problems);
      node->objects.emplace_back("mlir_" + name + ".o", compiled.object);
      node->payloads[name] = spec.text;
      node->bufferized[name] = compiled.lowered_mlir;
      node->llvm_ir[name] = compiled.llvm_ir;
      node->compile_seconds[name] = compiled.seconds;
      node->functions.emplace_back(name, call_symbol(spec));
      specs.push_back(std::move(spec));
    } catch (const Error& e) {
      LOOM_THROW(Error) << "mlir: @" << name << ": " << e.what();
    }
  }
  node->wrapper_source = wrappers(specs);
  node->library = loom::runtime::build_host_library(*node->linked_code(), node.get());
  return loom::runtime::Module(node);
}

void validate(const loom::ObjectRef& function, const std::string& name) {
  const auto* f = function.as<loom::ir::ExternFuncNode>();
  if (!f) LOOM_THROW(Error) << "not an extern function";
  check_payload(read_spec(*f, name));
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("mlir") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "Extern kind mlir: kernels in MLIR (func, arith, math, linalg, tensor, scf, memref), compiled in process "
    "with MLIR 16"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<MlirModuleNode>();
  loom::ir::ExternKindRegistry::register_kind(
      "mlir", Function::typed([](loom::ObjectRef f, std::string name) { validate(f, name); }, "mlir.validate"),
      "a kernel in MLIR (func, arith, math, linalg, tensor, scf, memref on tensors or memrefs) called through "
      "call_dps; attrs opt_level",
      Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                      "mlir.build"));
  // The compile time of each function of a built module, for benchmarks.
  ctx.register_function("mlir.compile_seconds", Function::typed(
                                                    [](loom::runtime::Module m, std::string name) -> double {
                                                      const auto* node = m.as<MlirModuleNode>();
                                                      if (!node)
                                                        LOOM_THROW(Error) << "mlir.compile_seconds: not an mlir module";
                                                      auto it = node->compile_seconds.find(name);
                                                      if (it == node->compile_seconds.end())
                                                        LOOM_THROW(Error)
                                                            << "mlir.compile_seconds: no function @" << name;
                                                      return it->second;
                                                    },
                                                    "mlir.compile_seconds"));
}
