// MLIR 16 in process: parse, verify, check the signature, bufferize, lower
// to the LLVM dialect, translate to LLVM IR and emit an object; see
// compiler.h and docs/extern-mlir.md.
//
// The pipeline is the one in docs/extern-mlir.md ("The pipeline"): one-shot
// bufferization with identity layouts at function boundaries (input tensors
// read-only, destination tensors writable), then a generated entry function
// on memrefs that calls the payload's function and copies each result that
// is not already in its output buffer into it (freeing a result the
// function allocated), then the conversions to the LLVM dialect.
#include "compiler.h"

#include <llvm/ADT/StringSet.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <mlir/Conversion/AffineToStandard/AffineToStandard.h>
#include <mlir/Conversion/ArithToLLVM/ArithToLLVM.h>
#include <mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h>
#include <mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h>
#include <mlir/Conversion/MathToLLVM/MathToLLVM.h>
#include <mlir/Conversion/MathToLibm/MathToLibm.h>
#include <mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h>
#include <mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h>
#include <mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h>
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h>
#include <mlir/Dialect/Bufferization/Transforms/Passes.h>
#include <mlir/Dialect/ControlFlow/IR/ControlFlow.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Passes.h>
#include <mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/MemRef/Transforms/Passes.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/IR/Builders.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/Parser/Parser.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Export.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

namespace loom::mlir_kind {
namespace {

// The dialects a payload may use: the issue's seven, and the three their
// ops and their lowering bring with them (affine maps and affine.apply in
// linalg, bufferization.to_tensor/to_memref, cf branches).
const std::vector<std::string>& accepted_dialects() {
  static const std::vector<std::string> names = {"func", "arith",  "math",   "linalg",        "tensor",
                                                 "scf",  "memref", "affine", "bufferization", "cf"};
  return names;
}

std::string accepted_list() {
  std::string out;
  for (const std::string& name : accepted_dialects()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

void initialize_llvm() { llvm_support::initialize_targets(); }

// A context with the accepted dialects, their bufferization models and the
// LLVM dialect (for the lowering and the translation).  Multithreading is
// off: a plugin compiles one function at a time and MLIR's thread pool
// would outlive the call.
std::unique_ptr<mlir::MLIRContext> make_context() {
  mlir::DialectRegistry registry;
  registry
      .insert<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::linalg::LinalgDialect,
              mlir::tensor::TensorDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect, mlir::AffineDialect,
              mlir::bufferization::BufferizationDialect, mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::registerLLVMDialectTranslation(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

// The first file position inside a location (through names, call sites,
// fused locations).
std::optional<mlir::FileLineColLoc> position(mlir::Location loc) {
  std::optional<mlir::FileLineColLoc> found;
  loc->walk([&](mlir::Location inner) {
    if (auto file = inner.dyn_cast<mlir::FileLineColLoc>()) {
      found = file;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return found;
}

std::string line_of_text(const std::string& text, int line) {
  std::istringstream in(text);
  std::string out;
  for (int k = 1; std::getline(in, out); ++k)
    if (k == line) return out;
  return "";
}

// MLIR's words for an op of a dialect it does not know, in the kind's.
std::string reworded(const std::string& message) {
  for (const char* prefix : {"Dialect `", "dialect '"}) {
    size_t at = message.find(prefix);
    if (at == std::string::npos) continue;
    size_t start = at + std::string(prefix).size();
    size_t end = message.find_first_of("`'", start);
    if (end == std::string::npos || message.find("not found") == std::string::npos) continue;
    std::string dialect = message.substr(start, end - start);
    return "the dialect '" + dialect + "' is not one the mlir kind lowers (it lowers " + accepted_list() + ")";
  }
  if (message.find("unregistered dialect") != std::string::npos)
    return "the operation is of a dialect the mlir kind does not lower (it lowers " + accepted_list() + ")";
  return message;
}

// Collects the errors MLIR reports while it is alive, with their place in
// the payload (the buffer named "payload").
class Collector {
 public:
  Collector(mlir::MLIRContext& context, const std::string& text, std::vector<Problem>& out)
      : handler_(&context, [this](mlir::Diagnostic& d) { return add(d); }), text_(text), out_(out) {}

  mlir::LogicalResult add(mlir::Diagnostic& d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error) return mlir::success();
    Problem p;
    p.message = reworded(d.str());
    bool own_words = p.message != d.str();  // MLIR's notes explain its words, not ours
    for (const mlir::Diagnostic& note : d.getNotes()) {
      if (own_words) break;
      if (llvm::StringRef(note.str()).startswith("see current operation")) continue;
      std::optional<mlir::FileLineColLoc> at = position(note.getLocation());
      p.message += "\n      note";
      if (at && at->getFilename() == "payload") p.message += " (line " + std::to_string(at->getLine()) + ")";
      p.message += ": " + note.str();
    }
    std::optional<mlir::FileLineColLoc> at = position(d.getLocation());
    if (at && at->getFilename() == "payload") {
      p.line = static_cast<int>(at->getLine());
      p.column = static_cast<int>(at->getColumn());
      p.source_line = line_of_text(text_, p.line);
    }
    out_.push_back(std::move(p));
    return mlir::success();
  }

 private:
  mlir::ScopedDiagnosticHandler handler_;
  const std::string& text_;
  std::vector<Problem>& out_;
};

Problem problem_at(mlir::Location loc, const std::string& text, const std::string& message) {
  Problem p;
  p.message = message;
  if (std::optional<mlir::FileLineColLoc> at = position(loc)) {
    p.line = static_cast<int>(at->getLine());
    p.column = static_cast<int>(at->getColumn());
    p.source_line = line_of_text(text, p.line);
  }
  return p;
}

std::string type_text(mlir::Type type) {
  std::string out;
  llvm::raw_string_ostream s(out);
  type.print(s);
  return s.str();
}

bool element_matches(mlir::Type element, const Param& p) {
  switch (p.code) {
    case 2:  // float
      return (p.bits == 16 && element.isF16()) || (p.bits == 32 && element.isF32()) ||
             (p.bits == 64 && element.isF64());
    case 4:  // bfloat
      return p.bits == 16 && element.isBF16();
    case 0:  // int
      return element.isInteger(p.bits) && !element.isUnsignedInteger();
    case 1:  // uint
      return element.isInteger(p.bits) && !element.isSignedInteger();
    case 6:  // bool
      return element.isInteger(1);
    default:
      return false;
  }
}

// The element type, rank and constant extents of `type` against `p`; an
// empty string when they agree.
std::string mismatch(mlir::Type type, const Param& p, bool want_tensor, bool want_memref) {
  auto shaped = type.dyn_cast<mlir::ShapedType>();
  bool tensor = type.isa<mlir::RankedTensorType>();
  bool memref = type.isa<mlir::MemRefType>();
  if (!shaped || !shaped.hasRank() || !(tensor || memref)) return "it is not a ranked tensor or memref";
  if (want_tensor && !tensor) return "it must be a tensor here";
  if (want_memref && !memref) return "it must be a memref (a function with no results writes its outputs)";
  if (!element_matches(shaped.getElementType(), p))
    return "its element type " + type_text(shaped.getElementType()) + " is not " + p.dtype;
  if (shaped.getRank() != static_cast<int64_t>(p.dims.size()))
    return "its rank is " + std::to_string(shaped.getRank()) + ", not " + std::to_string(p.dims.size());
  for (int64_t d = 0; d < shaped.getRank(); ++d) {
    int64_t extent = shaped.getDimSize(d);
    if (mlir::ShapedType::isDynamic(extent)) continue;
    if (p.dims[d] < 0)
      return "dimension " + std::to_string(d) + " is " + std::to_string(extent) +
             ", but the extern declares it symbolic (write ? in the payload, or the constant in the extern)";
    if (extent != p.dims[d])
      return "dimension " + std::to_string(d) + " is " + std::to_string(extent) + ", not " + std::to_string(p.dims[d]);
  }
  if (auto m = type.dyn_cast<mlir::MemRefType>()) {
    if (m.getMemorySpace()) return "it is not in the default memory space";
    auto identity = mlir::MemRefType::get(m.getShape(), m.getElementType());
    if (!mlir::memref::CastOp::areCastCompatible(identity, m))
      return "its layout cannot take a compact (row-major) buffer";
  }
  return "";
}

// The single public function with a body, or a problem.
mlir::func::FuncOp public_function(mlir::ModuleOp module, const std::string& text, std::vector<Problem>& problems) {
  std::vector<mlir::func::FuncOp> found;
  module.walk([&](mlir::func::FuncOp f) {
    if (!f.isPrivate() && !f.isDeclaration()) found.push_back(f);
  });
  if (found.size() == 1) return found[0];
  if (found.empty()) {
    problems.push_back({0, 0, "the payload defines no public func.func (the function Loom calls)", ""});
  } else {
    std::string names;
    for (auto f : found) names += (names.empty() ? "@" : ", @") + f.getName().str();
    problems.push_back(problem_at(found[1].getLoc(), text,
                                  "the payload defines " + std::to_string(found.size()) + " public functions (" +
                                      names + "); make all but the one Loom calls private"));
  }
  return nullptr;
}

std::string declared(const Param& p) { return p.declared.empty() ? p.dtype : p.declared; }

// Checks the signature of `f` against `params`; returns the form.
Form check_signature(mlir::func::FuncOp f, const std::vector<Param>& params, const std::string& text,
                     std::vector<Problem>& problems) {
  mlir::FunctionType type = f.getFunctionType();
  size_t k = params.size(), n = type.getNumInputs(), r = type.getNumResults();
  std::string name = "@" + f.getName().str();
  auto fail = [&](const std::string& message) { problems.push_back(problem_at(f.getLoc(), text, message)); };
  Form form;
  if (r == 0 && n == k) {
    form = Form::kMemref;
  } else if (r > 0 && r <= k && n + r == k) {
    form = Form::kValue;
  } else if (r > 0 && r <= k && n == k) {
    form = Form::kDestination;
  } else {
    fail(name + " takes " + std::to_string(n) + " parameter" + (n == 1 ? "" : "s") + " and returns " +
         std::to_string(r) + " result" + (r == 1 ? "" : "s") + ", but the extern declares " + std::to_string(k) +
         " tensor" + (k == 1 ? "" : "s") +
         " (inputs, then outputs): take them all as memrefs and return nothing, or take the inputs and return the "
         "outputs as tensors, or take all of them and return the outputs");
    return Form::kMemref;
  }
  size_t inputs = k - r;
  for (size_t i = 0; i < n; ++i) {
    bool dest = form == Form::kDestination && i >= inputs;
    std::string why = mismatch(type.getInput(i), params[i], dest, form == Form::kMemref);
    if (!why.empty()) {
      fail("parameter " + std::to_string(i) + " of " + name + " is " + type_text(type.getInput(i)) +
           ", but the extern declares " + declared(params[i]) + ": " + why);
    }
  }
  for (size_t j = 0; j < r; ++j) {
    std::string why = mismatch(type.getResult(j), params[inputs + j], true, false);
    if (!why.empty()) {
      fail("result " + std::to_string(j) + " of " + name + " is " + type_text(type.getResult(j)) +
           ", but the extern declares output " + std::to_string(inputs + j) + " as " + declared(params[inputs + j]) +
           ": " + why);
    }
  }
  return form;
}

// Every op's dialect must be one the kind lowers.
void check_dialects(mlir::ModuleOp module, const std::string& text, std::vector<Problem>& problems) {
  const auto& accepted = accepted_dialects();
  module.walk([&](mlir::Operation* op) {
    if (op == module.getOperation()) return;
    std::string dialect = op->getName().getDialectNamespace().str();
    if (std::find(accepted.begin(), accepted.end(), dialect) == accepted.end()) {
      problems.push_back(problem_at(op->getLoc(), text,
                                    "'" + op->getName().getStringRef().str() + "' is of the dialect '" + dialect +
                                        "', which the mlir kind does not lower (it lowers " + accepted_list() + ")"));
    }
  });
}

struct Parsed {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp function;
  Form form = Form::kMemref;
};

Parsed parse_checked(const std::string& text, const std::vector<Param>& params, std::vector<Problem>& problems) {
  Parsed out;
  out.context = make_context();
  Collector collector(*out.context, text, problems);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "payload"), llvm::SMLoc());
  mlir::ParserConfig config(out.context.get(), /*verifyAfterParse=*/true);
  out.module = mlir::parseSourceFile<mlir::ModuleOp>(sources, config);
  if (!out.module) {
    if (problems.empty()) problems.push_back({0, 0, "the payload does not parse", ""});
    return out;
  }
  check_dialects(*out.module, text, problems);
  if (!problems.empty()) return out;
  out.function = public_function(*out.module, text, problems);
  if (!out.function) return out;
  out.form = check_signature(out.function, params, text, problems);
  return out;
}

// ---- compilation ---------------------------------------------------------

// The memref through casts, and whether it is an allocation of the
// function (which the entry frees after copying it).
bool is_allocation(mlir::Value value) {
  while (auto cast = value.getDefiningOp<mlir::memref::CastOp>()) value = cast.getSource();
  return value.getDefiningOp<mlir::memref::AllocOp>() != nullptr;
}

mlir::Value cast_to(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value, mlir::Type type) {
  if (value.getType() == type) return value;
  return b.create<mlir::memref::CastOp>(loc, type, value);
}

// Adds the entry function: memrefs of the declared shapes (identity
// layout) in, the payload's function called, each result copied into its
// output unless it already is that output, an allocated result freed.
void add_entry(mlir::ModuleOp module, mlir::func::FuncOp f, Form form, const std::vector<Param>& params,
               const std::string& entry) {
  mlir::MLIRContext* context = module.getContext();
  mlir::OpBuilder b(context);
  mlir::Location loc = f.getLoc();
  mlir::FunctionType ftype = f.getFunctionType();
  size_t k = params.size(), results = ftype.getNumResults(), inputs = k - results;
  auto element_of = [&](size_t i) -> mlir::Type {
    if (i < ftype.getNumInputs()) return ftype.getInput(i).cast<mlir::ShapedType>().getElementType();
    return ftype.getResult(i - inputs).cast<mlir::ShapedType>().getElementType();
  };
  // The declared shapes, with the element types the function has.
  std::vector<mlir::Type> types(k);
  for (size_t i = 0; i < k; ++i) {
    std::vector<int64_t> shape;
    for (int64_t d : params[i].dims) shape.push_back(d < 0 ? mlir::ShapedType::kDynamic : d);
    types[i] = mlir::MemRefType::get(shape, element_of(i));
  }
  b.setInsertionPointToEnd(module.getBody());
  auto main = b.create<mlir::func::FuncOp>(loc, entry, b.getFunctionType(types, {b.getI32Type()}));
  main->setAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  mlir::Block* block = main.addEntryBlock();
  b.setInsertionPointToStart(block);
  std::vector<mlir::Value> operands;
  for (size_t i = 0; i < ftype.getNumInputs(); ++i)
    operands.push_back(cast_to(b, loc, block->getArgument(i), ftype.getInput(i)));
  auto call = b.create<mlir::func::CallOp>(loc, f, operands);
  // What the function returns, read from its return op.
  mlir::func::ReturnOp ret;
  f.walk([&](mlir::func::ReturnOp op) { ret = op; });
  // The results to copy into their outputs, each with its shape checked
  // against the output's first (a result of another shape is an error
  // status, never a copy past the end of a buffer).
  struct Copy {
    mlir::Value result, out;
  };
  std::vector<Copy> copies;
  std::vector<mlir::Value> frees;
  std::set<mlir::Operation*> freed;
  mlir::Value ok = b.create<mlir::arith::ConstantIntOp>(loc, 1, 1);
  for (size_t j = 0; j < results; ++j) {
    mlir::Value out = block->getArgument(inputs + j);
    mlir::Value returned = ret ? ret.getOperand(j) : mlir::Value();
    if (auto arg = returned.dyn_cast_or_null<mlir::BlockArgument>()) {
      if (form == Form::kDestination && arg.getArgNumber() == inputs + j) continue;  // written in place
    }
    mlir::Value result = call.getResult(j);
    int64_t rank = result.getType().cast<mlir::MemRefType>().getRank();
    for (int64_t d = 0; d < rank; ++d) {
      mlir::Value have = b.create<mlir::memref::DimOp>(loc, result, d);
      mlir::Value want = b.create<mlir::memref::DimOp>(loc, out, d);
      mlir::Value same = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, have, want);
      ok = b.create<mlir::arith::AndIOp>(loc, ok, same);
    }
    copies.push_back({result, out});
    if (returned && is_allocation(returned)) {
      mlir::Value root = returned;
      while (auto c = root.getDefiningOp<mlir::memref::CastOp>()) root = c.getSource();
      if (freed.insert(root.getDefiningOp()).second) frees.push_back(result);
    }
  }
  if (!copies.empty()) {
    auto when = b.create<mlir::scf::IfOp>(loc, ok, /*withElseRegion=*/false);
    mlir::OpBuilder inside = when.getThenBodyBuilder();
    for (const Copy& c : copies)
      inside.create<mlir::memref::CopyOp>(loc, cast_to(inside, loc, c.result, c.out.getType()), c.out);
  }
  for (mlir::Value v : frees) b.create<mlir::memref::DeallocOp>(loc, v);
  mlir::Value zero = b.create<mlir::arith::ConstantIntOp>(loc, 0, 32);
  mlir::Value one = b.create<mlir::arith::ConstantIntOp>(loc, 1, 32);
  mlir::Value status = b.create<mlir::arith::SelectOp>(loc, ok, zero, one);
  b.create<mlir::func::ReturnOp>(loc, status);
}

bool run(mlir::PassManager& pm, mlir::ModuleOp module) { return mlir::succeeded(pm.run(module)); }

std::unique_ptr<llvm::TargetMachine> make_machine(const Machine& m, int opt_level, std::string& error) {
  initialize_llvm();
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(m.triple, error);
  if (!target) return nullptr;
  llvm::TargetOptions options;
  auto level = opt_level <= 0   ? llvm::CodeGenOpt::None
               : opt_level == 1 ? llvm::CodeGenOpt::Less
               : opt_level == 2 ? llvm::CodeGenOpt::Default
                                : llvm::CodeGenOpt::Aggressive;
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(m.triple, m.cpu, m.features, options, llvm::Reloc::PIC_, std::nullopt, level));
}

// The C library functions the lowered code may call; anything else (MLIR's
// runtime library, say) would make the exported library need it.
bool is_libc_or_libm(llvm::StringRef name) {
  static const llvm::StringSet<> known = {
      "malloc", "free",      "aligned_alloc", "memcpy", "memmove", "memset",     "abort",      "expf",     "exp",
      "exp2f",  "exp2",      "logf",          "log",    "log2f",   "log2",       "log10f",     "log10",    "log1pf",
      "log1p",  "expm1f",    "expm1",         "sinf",   "sin",     "cosf",       "cos",        "tanf",     "tan",
      "tanhf",  "tanh",      "atanf",         "atan",   "atan2f",  "atan2",      "erff",       "erf",      "powf",
      "pow",    "sqrtf",     "sqrt",          "cbrtf",  "cbrt",    "fabsf",      "fabs",       "floorf",   "floor",
      "ceilf",  "ceil",      "roundf",        "round",  "truncf",  "trunc",      "fmaf",       "fma",      "fmodf",
      "fmod",   "copysignf", "copysign",      "rintf",  "rint",    "nearbyintf", "nearbyint",  "acosf",    "acos",
      "asinf",  "asin",      "sinhf",         "sinh",   "coshf",   "cosh",       "roundevenf", "roundeven"};
  return known.contains(name);
}
}  // namespace

Checked check(const std::string& text, const std::vector<Param>& params) {
  Checked out;
  Parsed parsed = parse_checked(text, params, out.problems);
  if (parsed.function) {
    out.function = parsed.function.getName().str();
    out.form = parsed.form;
    out.results = static_cast<int>(parsed.function.getFunctionType().getNumResults());
  }
  return out;
}

Compiled compile(const std::string& text, const std::vector<Param>& params, const std::string& entry,
                 const Machine& machine, int opt_level) {
  auto start = std::chrono::steady_clock::now();
  Compiled out;
  Parsed parsed = parse_checked(text, params, out.problems);
  if (!out.problems.empty()) return out;
  mlir::ModuleOp module = *parsed.module;
  mlir::func::FuncOp f = parsed.function;
  Collector collector(*parsed.context, text, out.problems);
  // The payload's function becomes private under a name of its own, so two
  // payloads with the same function name link into one library.
  if (module.lookupSymbol(entry)) {
    out.problems.push_back({0, 0, "the payload already defines @" + entry + ", the name of Loom's entry", ""});
    return out;
  }
  std::string private_name = entry + "_impl";
  if (mlir::failed(mlir::SymbolTable::replaceAllSymbolUses(f, mlir::StringAttr::get(parsed.context.get(), private_name),
                                                           module))) {
    out.problems.push_back({0, 0, "cannot rename the payload's function", ""});
    return out;
  }
  mlir::SymbolTable::setSymbolName(f, private_name);
  f.setPrivate();
  f->removeAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName());
  // Inputs are Loom's tensors, which the function must not write;
  // destination tensors are its outputs.
  size_t inputs = params.size() - f.getFunctionType().getNumResults();
  for (size_t i = 0; i < f.getNumArguments(); ++i) {
    if (f.getArgument(i).getType().isa<mlir::TensorType>()) {
      f.setArgAttr(i, mlir::bufferization::BufferizationDialect::kWritableAttrName,
                   mlir::BoolAttr::get(parsed.context.get(), parsed.form == Form::kDestination && i >= inputs));
    }
  }
  mlir::bufferization::OneShotBufferizationOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.functionBoundaryTypeConversion = mlir::bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferization.allowReturnAllocs = true;
  {
    mlir::PassManager pm(parsed.context.get());
    pm.addPass(mlir::bufferization::createEmptyTensorToAllocTensorPass());
    pm.addPass(mlir::bufferization::createOneShotBufferizePass(bufferization));
    if (!run(pm, module)) {
      if (out.problems.empty()) out.problems.push_back({0, 0, "bufferization failed", ""});
      return out;
    }
  }
  add_entry(module, f, parsed.form, params, entry);
  {
    std::string s;
    llvm::raw_string_ostream stream(s);
    module.print(stream);
    out.lowered_mlir = stream.str();
  }
  mlir::PassManager pm(parsed.context.get());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createConvertLinalgToLoopsPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createMemRefToLLVMConversionPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::cf::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  if (!run(pm, module)) {
    if (out.problems.empty()) out.problems.push_back({0, 0, "the lowering to the LLVM dialect failed", ""});
    return out;
  }
  // Anything left outside the LLVM dialect is an op the pipeline does not
  // lower.
  module.walk([&](mlir::Operation* op) {
    if (op == module.getOperation() || op->getDialect()->getNamespace() == "llvm") return;
    out.problems.push_back(
        problem_at(op->getLoc(), text, "the pipeline does not lower '" + op->getName().getStringRef().str() + "'"));
  });
  if (!out.problems.empty()) return out;
  llvm::LLVMContext llvm_context;
  std::unique_ptr<llvm::Module> ir = mlir::translateModuleToLLVMIR(module, llvm_context, "loom_mlir_" + entry);
  if (!ir) {
    if (out.problems.empty()) out.problems.push_back({0, 0, "the translation to LLVM IR failed", ""});
    return out;
  }
  std::string error;
  std::unique_ptr<llvm::TargetMachine> target = make_machine(machine, opt_level, error);
  if (!target) {
    out.problems.push_back({0, 0, "LLVM cannot compile for " + machine.triple + ": " + error, ""});
    return out;
  }
  ir->setTargetTriple(machine.triple);
  ir->setDataLayout(target->createDataLayout());
  // Only the entry's C interface is global.
  std::string ciface = "_mlir_ciface_" + entry;
  for (llvm::Function& fn : ir->functions()) {
    if (fn.isDeclaration()) continue;
    if (fn.getName() != ciface) fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  for (llvm::GlobalVariable& g : ir->globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);
  llvm_support::optimize(*ir, *target, opt_level);
  for (llvm::Function& fn : ir->functions()) {
    if (fn.isDeclaration() && !fn.isIntrinsic() && !fn.use_empty() && !is_libc_or_libm(fn.getName())) {
      out.problems.push_back({0, 0,
                              "the lowered code calls '" + fn.getName().str() +
                                  "', which is not in the C library (an exported library could not run it)",
                              ""});
    }
  }
  if (!out.problems.empty()) return out;
  {
    llvm::raw_string_ostream stream(out.llvm_ir);
    ir->print(stream, nullptr);
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (target->addPassesToEmitFile(passes, stream, nullptr, llvm::CGFT_ObjectFile)) {
    out.problems.push_back({0, 0, "LLVM cannot emit an object for " + machine.triple, ""});
    return out;
  }
  passes.run(*ir);
  out.object.assign(buffer.begin(), buffer.end());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace loom::mlir_kind
