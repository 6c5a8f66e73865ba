// The asm plugin (docs/extern-asm.md): the extern kind `asm`, hand-written
// assembly inside an IRModule.
//
// Validation (at well-formedness time) reads the function's ISA, declared
// extensions, symbol and signature, and assembles the text with LLVM MC in
// this process (assembler.h): the symbol must be defined and global, and an
// x86 instruction that needs AVX or AVX-512 must be declared.  The build
// (the kind's builder, called by driver::build_kernels) checks the ISA and
// the extensions against the target, assembles each function into an
// object and generates C wrappers that check the DLTensor arguments and
// call the assembly with the C calling convention (pointers, then the
// symbolic dimensions).  The module's functions run in memory (the system C
// compiler links objects and wrappers into a private library) and its code
// is linked into an exported library (linked_code), so both paths run the
// same machine code.
#include <loom/dps_wrapper_c.h>
#include <loom/ir/diagnostic.h>
#include <loom/tir/dps_signature.h>
#include <loom/ir/op.h>
#include <loom/ir/text.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/library.h>
#include <loom/runtime/module.h>
#include <loom/support/strings.h>
#include <loom/target/target.h>
#include <loom/text/text.h>
#include <loom/tir/function.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "assembler.h"

namespace {
using loom::Any;
using loom::Array;
using loom::DataType;
using loom::Error;
using loom::Function;
using loom::Map;
using loom::ir::IRModule;
namespace kind = loom::asm_kind;

// The ISAs the kind accepts, and the extensions a function may declare
// (LLVM's feature names; every one is known to LLVM 16).
struct Isa {
  std::string name;
  std::string triple;
  std::string baseline_cpu;
  std::vector<std::string> extensions;
};

const std::vector<Isa>& isas() {
  static const std::vector<Isa> all = {
      {"x86_64",
       "x86_64-unknown-linux-gnu",
       "x86-64",
       {"sse3",     "ssse3",      "sse4.1",     "sse4.2",     "popcnt",     "avx",       "avx2",     "fma",
        "f16c",     "bmi",        "bmi2",       "lzcnt",      "movbe",      "aes",       "pclmul",   "sha",
        "gfni",     "vaes",       "vpclmulqdq", "avxvnni",    "avx512f",    "avx512cd",  "avx512bw", "avx512dq",
        "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avx512ifma"}},
      {"aarch64",
       "aarch64-unknown-linux-gnu",
       "generic",
       {"neon", "fp-armv8", "crc", "aes", "sha2", "dotprod", "fullfp16", "fp16fml", "rcpc", "lse", "i8mm", "bf16",
        "sve", "sve2"}},
  };
  return all;
}

const Isa* find_isa(const std::string& name) {
  for (const Isa& isa : isas())
    if (isa.name == name) return &isa;
  return nullptr;
}

std::vector<std::string> isa_names() {
  std::vector<std::string> out;
  for (const Isa& isa : isas()) out.push_back(isa.name);
  return out;
}

// An asm function, read and checked from its ir.ExternFunc.
struct Spec {
  std::string name;    // the IR function's global name
  std::string symbol;  // the assembly's entry symbol
  const Isa* isa = nullptr;
  std::vector<std::string> features;  // declared extensions
  // The tensors (a data pointer each) and the symbolic dimensions, passed
  // as int64 after the pointers.
  loom::runtime::DpsSignature signature;
  std::string text;
  // The IR function, alive while the spec is used: where its payload was
  // parsed from, for diagnostics.
  const loom::ir::ExternFuncNode* function = nullptr;

  // "FILE:LINE:COL: " of a line and column of the assembly when the module
  // was parsed from text, else "".
  std::string position(int line, int column) const {
    std::string at = function ? loom::text::payload_position(*function, line, column) : "";
    return at.empty() ? at : at + ": ";
  }

  kind::Machine machine() const {
    std::string list;
    for (const std::string& f : features) list += (list.empty() ? "+" : ",+") + f;
    return {isa->triple, isa->baseline_cpu, list};
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
      f, "an asm function", "(their data pointers), and its scalars are the symbolic dimensions of their shapes");
  if (f.encoding != "text") LOOM_THROW(Error) << "an asm function's payload is assembly text, not " << f.encoding;
  // isa
  if (!f.attrs.contains("isa") || f.attrs.at("isa").kind() != loom::AnyKind::kStr) {
    LOOM_THROW(Error) << "an asm function needs the attribute isa, a string: one of " << loom::join(isa_names(), ", ");
  }
  std::string isa = f.attrs.at("isa").as_string();
  spec.isa = find_isa(isa);
  if (!spec.isa) {
    LOOM_THROW(Error) << "isa '" << isa << "' is not one the asm kind assembles (" << loom::join(isa_names(), ", ")
                      << ")" << loom::did_you_mean(isa, isa_names());
  }
  // the other attributes
  for (const auto& [key, value] : f.attrs->items) {
    if (key != "isa" && key != "features" && key != "global_symbol") {
      LOOM_THROW(Error) << "an asm function has no attribute '" << key << "' (it has isa, features, global_symbol)"
                        << loom::did_you_mean(key, {"isa", "features", "global_symbol"});
    }
  }
  if (f.attrs.contains("features")) {
    const Any& value = f.attrs.at("features");
    const auto* list = value.object() ? value.as_object_ref().as<loom::ArrayNode>() : nullptr;
    if (!list)
      LOOM_THROW(Error) << "the attribute features must be a list of extension names, e.g. [\"avx2\", \"fma\"]";
    for (const Any& item : list->items) {
      if (item.kind() != loom::AnyKind::kStr) {
        LOOM_THROW(Error) << "the attribute features must be a list of strings, not " << item.describe();
      }
      const std::string& feature = item.as_string();
      const auto& known = spec.isa->extensions;
      if (std::find(known.begin(), known.end(), feature) == known.end()) {
        LOOM_THROW(Error) << "'" << feature << "' is not an extension of " << isa << " the asm kind knows"
                          << loom::did_you_mean(feature, known) << " (known: " << loom::join(known, ", ") << ")";
      }
      spec.features.push_back(feature);
    }
  }
  spec.symbol = name;
  if (f.attrs.contains("global_symbol")) {
    if (f.attrs.at("global_symbol").kind() != loom::AnyKind::kStr) {
      LOOM_THROW(Error) << "the attribute global_symbol must be a string";
    }
    spec.symbol = f.attrs.at("global_symbol").as_string();
  }
  if (!loom::is_c_identifier(spec.symbol)) {
    LOOM_THROW(Error) << "the entry symbol '" << spec.symbol
                      << "' is not a C identifier; name the function so, or set the attribute global_symbol";
  }
  return spec;
}

std::string describe_errors(const Spec& spec, const std::vector<kind::AsmDiagnostic>& errors) {
  std::ostringstream s;
  size_t shown = std::min<size_t>(errors.size(), 5);
  for (size_t k = 0; k < shown; ++k) {
    const kind::AsmDiagnostic& e = errors[k];
    s << "\n    ";
    if (e.line > 0) s << spec.position(e.line, e.column) << "asm line " << e.line << ":" << e.column << ": ";
    s << e.message;
    if (!e.source_line.empty()) s << "\n      " << e.source_line;
  }
  if (errors.size() > shown) s << "\n    (" << errors.size() - shown << " more)";
  return s.str();
}

// Assembles the function for its ISA and declared extensions and checks
// its symbol and its x86 encodings.  Throws Error (without the name).
kind::Assembled assemble_checked(const Spec& spec) {
  kind::Machine machine = spec.machine();
  kind::Assembled out = kind::assemble(spec.text, machine);
  if (!out.errors.empty()) {
    LOOM_THROW(Error) << "the assembly (" << spec.isa->name
                      << ") does not assemble:" << describe_errors(spec, out.errors);
  }
  if (!out.global_symbols.count(spec.symbol)) {
    if (out.local_symbols.count(spec.symbol)) {
      LOOM_THROW(Error) << "the assembly defines '" << spec.symbol << "' but not as a global symbol (add .globl "
                        << spec.symbol << ")";
    }
    std::vector<std::string> defined(out.global_symbols.begin(), out.global_symbols.end());
    LOOM_THROW(Error) << "the assembly does not define the global symbol '" << spec.symbol
                      << "' (the function's name, or its global_symbol attribute)"
                      << loom::did_you_mean(spec.symbol, defined);
  }
  // One answer per extension (at most two), not one per instruction.
  std::set<std::string> present;
  for (const kind::EncodedNeed& need : out.needs) {
    if (present.count(need.extension)) continue;
    if (kind::has_extension(machine, need.extension)) {
      present.insert(need.extension);
      continue;
    }
    LOOM_THROW(Error) << spec.position(need.line, 1) << "asm line " << need.line << " is a " << need.encoding
                      << "-encoded instruction, which needs " << need.extension
                      << ", but the function does not declare it or an extension that implies it "
                      << "(attrs {features: [\"" << need.extension << "\"]})";
  }
  return out;
}

// ---- the build ---------------------------------------------------------------

// The machine that runs the module's host code: the module's host target
// when it has one, else the target; its mtriple, mcpu and mattr when its
// kind has them, else this machine.
kind::Machine machine_of(const loom::target::Target& target, const kind::Machine& host, std::string* description) {
  const Map& attrs = target->attrs;
  auto text = [&](const char* key) { return attrs.contains(key) ? attrs.at(key).as_string() : std::string(); };
  kind::Machine m;
  m.triple = text("mtriple").empty() ? host.triple : text("mtriple");
  std::string cpu = text("mcpu");
  std::ostringstream d;
  d << "target " << target->kind;
  if (cpu.empty() || cpu == "native") {
    if (kind::isa_of_triple(m.triple) != kind::isa_of_triple(host.triple)) {
      LOOM_THROW(Error) << "asm: the target's mcpu 'native' cannot run mtriple '" << m.triple << "'; name a CPU";
    }
    m.cpu = host.cpu;
    m.features = host.features;
    d << " (this machine's CPU, " << host.cpu << ")";
  } else {
    if (!kind::is_known_cpu(m.triple, cpu)) {
      LOOM_THROW(Error) << "asm: the target's mcpu '" << cpu << "' is not a CPU LLVM knows for " << m.triple;
    }
    m.cpu = cpu;
    d << " (mcpu " << cpu << ")";
  }
  std::string mattr = text("mattr");
  if (!mattr.empty()) {
    m.features += (m.features.empty() ? "" : ",") + mattr;
    d << " with mattr " << mattr;
  }
  *description = d.str();
  return m;
}

// The C wrappers: one LoomBackendFunc per function, checking each DLTensor
// (type code, device, dtype, rank, extents, compact strides), binding the
// symbolic dimensions, checking the CPU's extensions (x86, with the C
// compiler's __builtin_cpu_supports) and calling the assembly.
std::string wrapper_symbol(const Spec& spec) { return "__loom_asm_" + spec.symbol; }

std::string wrappers(const std::vector<Spec>& specs) {
  std::ostringstream c;
  c << R"(/* Generated by Loom's asm plugin (docs/extern-asm.md): LoomBackendFunc
 * wrappers (loom/runtime/c_backend_api.h) around hand-written assembly. */
#include <stdio.h>
#include "loom/runtime/c_backend_api.h"
extern const LoomHostApi* __loom_host_api;
)" << loom::dps_wrapper_c::checker("loom_asm", "asm code reads host (CPU) memory", "asm code needs compact tensors");
  for (const Spec& spec : specs) {
    size_t n = spec.signature.params.size();
    c << "\n/* @" << spec.name << " (" << spec.isa->name << ") */\n";
    c << "extern void " << spec.symbol << "(";
    for (size_t i = 0; i < n + spec.signature.dims.size(); ++i) c << (i ? ", " : "") << (i < n ? "void*" : "int64_t");
    if (n + spec.signature.dims.size() == 0) c << "void";
    c << ");\n";
    c << "int32_t " << wrapper_symbol(spec)
      << "(const LoomValue* args, const int32_t* codes, int32_t num_args, LoomValue* ret, int32_t* ret_code, "
         "void* resource) {\n";
    c << "  void* data[" << std::max<size_t>(n, 1) << "];\n";
    c << loom::dps_wrapper_c::prologue("loom_asm", spec.signature);
    for (const std::string& feature : spec.features) {
      static const std::vector<std::string> gcc_known = {
          "sse3",     "ssse3",      "sse4.1",     "sse4.2",     "popcnt",     "avx",      "avx2",      "fma",
          "bmi",      "bmi2",       "aes",        "pclmul",     "avx512f",    "avx512cd", "avx512bw",  "avx512dq",
          "avx512vl", "avx512vnni", "avx512bf16", "avx512vbmi", "avx512ifma", "gfni",     "vpclmulqdq"};
      if (spec.isa->name != "x86_64" || std::find(gcc_known.begin(), gcc_known.end(), feature) == gcc_known.end())
        continue;
      c << "#if defined(__x86_64__) && defined(__GNUC__)\n"
        << "  if (!__builtin_cpu_supports(\"" << feature
        << "\")) return loom_asm_fail(\"the assembly uses the x86_64 extension " << feature
        << ", which this CPU lacks\");\n"
        << "#endif\n";
    }
    for (size_t i = 0; i < n; ++i)
      c << loom::dps_wrapper_c::check_argument("loom_asm", i, spec.signature.params[i],
                                               "data[" + std::to_string(i) + "]");
    c << "  " << spec.symbol << "(";
    for (size_t i = 0; i < n; ++i) c << (i ? ", " : "") << "data[" << i << "]";
    for (size_t k = 0; k < spec.signature.dims.size(); ++k) c << (n + k ? ", " : "") << "values[" << k << "]";
    c << ");\n  *ret_code = 0;\n  return 0;\n}\n";
  }
  return c.str();
}

class AsmModuleNode : public loom::runtime::HostCodeModuleNode {
 public:
  std::vector<std::pair<std::string, std::string>> objects;  // (file name, ELF object)
  std::map<std::string, std::string> texts;                  // name -> assembly
  std::string wrapper_source;
  std::string not_here;  // why the code cannot run here (no library), then

  std::string type_key() const override { return "asm"; }
  // Without a library (code for another machine), a function that says so.
  std::optional<Function> own_function(const std::string& name) const override {
    bool mine = std::any_of(functions.begin(), functions.end(), [&](const auto& f) { return f.first == name; });
    if (!mine || library) return HostCodeModuleNode::own_function(name);
    std::string why = "@" + name + " cannot run in this process: " + not_here;
    return Function([why](const Any*, int32_t) -> Any { throw Error(why); }, name);
  }
  std::optional<loom::runtime::LinkedCode> linked_code() const override {
    loom::runtime::LinkedCode code{objects, functions};
    code.files.emplace_back("asm_wrappers.c", wrapper_source);
    return code;
  }
  std::string inspect_source(const std::string& format) const override {
    if (format == "asm" || format == "s") {
      std::string out;
      for (const auto& [name, text] : texts)
        out += "# @" + name + "\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n");
      return out;
    }
    if (format == "c") return wrapper_source;
    LOOM_THROW(Error) << "asm module: no source format '" << format << "' (it has: asm, c)";
  }
  LOOM_OBJECT(AsmModuleNode, loom::runtime::HostCodeModuleNode, "asm.Module");
};

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  // The host target runs extern code when the module names one.
  loom::target::Target runs_on = target;
  if (module->attrs.contains("host")) {
    const Any& host = module->attrs.at("host");
    if (host.object() && host.object()->is_instance<loom::target::TargetNode>())
      runs_on = host.cast<loom::target::Target>();
  }
  std::string description;
  kind::Machine here = kind::host_machine();
  kind::Machine machine = machine_of(runs_on, here, &description);
  std::string target_isa = kind::isa_of_triple(machine.triple);
  auto node = loom::make_object<AsmModuleNode>();
  std::vector<Spec> specs;
  std::map<std::string, std::string> owners;  // global symbol -> function
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<loom::ir::ExternFuncNode>();
    if (!f) LOOM_THROW(Error) << "asm: @" << name << " is not an extern function";
    try {
      Spec spec = read_spec(*f, name);
      if (spec.isa->name != target_isa) {
        LOOM_THROW(Error) << "it is written for " << spec.isa->name << ", but " << description << " is " << target_isa;
      }
      for (const std::string& feature : spec.features) {
        if (!kind::has_extension(machine, feature)) {
          LOOM_THROW(Error) << "it uses the " << spec.isa->name << " extension " << feature << ", which " << description
                            << " lacks; build for a CPU that has it (mcpu, mattr) or write the "
                            << "function without it";
        }
      }
      kind::Assembled assembled = assemble_checked(spec);
      for (const std::string& symbol : assembled.global_symbols) {
        auto [it, fresh] = owners.emplace(symbol, name);
        if (!fresh)
          LOOM_THROW(Error) << "it defines the global symbol '" << symbol << "', as @" << it->second << " does";
      }
      node->objects.emplace_back("asm_" + spec.symbol + ".o", assembled.object);
      node->texts[name] = spec.text;
      node->functions.emplace_back(name, wrapper_symbol(spec));
      specs.push_back(std::move(spec));
    } catch (const Error& e) {
      LOOM_THROW(Error) << "asm: @" << name << ": " << e.what();
    }
  }
  node->wrapper_source = wrappers(specs);
  if (target_isa != kind::isa_of_triple(here.triple)) {
    node->not_here = "its code is " + target_isa + " and this machine is " + kind::isa_of_triple(here.triple) +
                     " (export it and run it on a " + target_isa + " machine)";
  } else {
    node->library = loom::runtime::build_host_library(*node->linked_code(), node.get());
  }
  return loom::runtime::Module(node);
}

void validate(const loom::ObjectRef& function, const std::string& name) {
  const auto* f = function.as<loom::ir::ExternFuncNode>();
  if (!f) LOOM_THROW(Error) << "not an extern function";
  assemble_checked(read_spec(*f, name));
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("asm") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "Extern kind asm: hand-written x86-64 or AArch64 assembly, assembled in "
    "process with LLVM MC"));

LOOM_PLUGIN_INIT(ctx) {
  kind::initialize();
  ctx.register_object<AsmModuleNode>();
  loom::ir::ExternKindRegistry::register_kind(
      "asm", Function::typed([](loom::ObjectRef f, std::string name) { validate(f, name); }, "asm.validate"),
      "hand-written assembly (x86_64, aarch64) called through call_dps; attrs isa, features, global_symbol",
      Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); }, "asm.build"));
}
