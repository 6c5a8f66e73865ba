// Assembly with LLVM MC, in process; see assembler.h.
#include "assembler.h"

#include <llvm/MC/MCAsmBackend.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCCodeEmitter.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCObjectFileInfo.h>
#include <llvm/MC/MCObjectWriter.h>
#include <llvm/MC/MCParser/MCAsmParser.h>
#include <llvm/MC/MCParser/MCTargetAsmParser.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCStreamer.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>
#include <mutex>

namespace loom::asm_kind {

void initialize() { llvm_support::initialize_targets(); }

namespace {
const llvm::Target* lookup(const std::string& triple, std::string* error = nullptr) {
  initialize();
  std::string message;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, message);
  if (error) *error = message;
  return target;
}

// The MC objects one assembly needs, for one machine.
struct Tools {
  const llvm::Target* target = nullptr;
  llvm::Triple triple;
  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCRegisterInfo> registers;
  std::unique_ptr<llvm::MCAsmInfo> asm_info;
  std::unique_ptr<llvm::MCInstrInfo> instructions;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget;

  explicit Tools(const Machine& m) : triple(m.triple) {
    target = lookup(m.triple);
    registers.reset(target->createMCRegInfo(m.triple));
    asm_info.reset(target->createMCAsmInfo(*registers, m.triple, options));
    instructions.reset(target->createMCInstrInfo());
    subtarget.reset(target->createMCSubtargetInfo(m.triple, m.cpu, m.features));
  }
};

// Collects the diagnostics of the parser and of the context.
struct Collector {
  std::vector<AsmDiagnostic>* out;
  void add(const llvm::SMDiagnostic& d) {
    if (d.getKind() != llvm::SourceMgr::DK_Error) return;
    out->push_back({d.getLineNo(), d.getColumnNo() + 1, d.getMessage().str(), d.getLineContents().str()});
  }
};

int line_of(const llvm::SourceMgr& sources, llvm::SMLoc loc) {
  return loc.isValid() ? static_cast<int>(sources.FindLineNumber(loc)) : 0;
}

// Parses the text once more into nothing but a list of the instructions'
// encodings: which need VEX or EVEX (x86).
class EncodingRecorder : public llvm::MCStreamer {
 public:
  EncodingRecorder(llvm::MCContext& context, llvm::MCCodeEmitter& emitter, const llvm::SourceMgr& sources,
                   std::vector<EncodedNeed>& out)
      : llvm::MCStreamer(context), emitter_(emitter), sources_(sources), out_(out) {}

  void emitInstruction(const llvm::MCInst& inst, const llvm::MCSubtargetInfo& info) override {
    llvm::SmallVector<char, 16> bytes;
    llvm::raw_svector_ostream stream(bytes);
    llvm::SmallVector<llvm::MCFixup, 4> fixups;
    emitter_.encodeInstruction(inst, stream, fixups, info);
    size_t k = 0;
    // Prefixes that may come before VEX or EVEX: segments, address size.
    auto prefix = [](unsigned char b) {
      return b == 0x26 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x64 || b == 0x65 || b == 0x67;
    };
    while (k < bytes.size() && prefix(static_cast<unsigned char>(bytes[k]))) ++k;
    if (k >= bytes.size()) return;
    unsigned char b = static_cast<unsigned char>(bytes[k]);
    // In 64-bit mode 0x62 always starts EVEX and 0xC4/0xC5 VEX.
    if (b == 0x62) out_.push_back({line_of(sources_, inst.getLoc()), "avx512f", "EVEX"});
    if (b == 0xC4 || b == 0xC5) out_.push_back({line_of(sources_, inst.getLoc()), "avx", "VEX"});
  }
  bool emitSymbolAttribute(llvm::MCSymbol*, llvm::MCSymbolAttr) override { return true; }
  void emitCommonSymbol(llvm::MCSymbol*, uint64_t, llvm::Align) override {}
  void emitZerofill(llvm::MCSection*, llvm::MCSymbol*, uint64_t, llvm::Align, llvm::SMLoc) override {}

 private:
  llvm::MCCodeEmitter& emitter_;
  const llvm::SourceMgr& sources_;
  std::vector<EncodedNeed>& out_;
};

// Runs the parser over `text` into the streamer `make_streamer` returns.
// Returns false on errors (in `errors`).
template <typename MakeStreamer>
bool run_parser(Tools& tools, const std::string& text, std::vector<AsmDiagnostic>& errors, bool object_file,
                MakeStreamer make_streamer) {
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "<asm>"), llvm::SMLoc());
  Collector collector{&errors};
  sources.setDiagHandler([](const llvm::SMDiagnostic& d, void* c) { static_cast<Collector*>(c)->add(d); }, &collector);
  llvm::MCContext context(tools.triple, tools.asm_info.get(), tools.registers.get(), tools.subtarget.get(), &sources,
                          &tools.options);
  context.setDiagnosticHandler([&collector](const llvm::SMDiagnostic& d, bool, const llvm::SourceMgr&,
                                            std::vector<const llvm::MDNode*>&) { collector.add(d); });
  std::unique_ptr<llvm::MCObjectFileInfo> files(tools.target->createMCObjectFileInfo(context, /*PIC=*/true));
  context.setObjectFileInfo(files.get());
  std::unique_ptr<llvm::MCStreamer> streamer = make_streamer(context, sources);
  if (object_file) streamer->initSections(/*NoExecStack=*/true, *tools.subtarget);
  std::unique_ptr<llvm::MCAsmParser> parser(llvm::createMCAsmParser(sources, context, *streamer, *tools.asm_info));
  std::unique_ptr<llvm::MCTargetAsmParser> target_parser(
      tools.target->createMCAsmParser(*tools.subtarget, *parser, *tools.instructions, tools.options));
  if (!target_parser) {
    errors.push_back({0, 0, "LLVM has no assembly parser for " + tools.triple.str(), ""});
    return false;
  }
  parser->setTargetParser(*target_parser);
  bool failed = parser->Run(/*NoInitialTextSection=*/false);
  if (!failed && object_file) streamer->finish();
  return !failed && errors.empty();
}

void read_symbols(const std::string& object, Assembled& out) {
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "<asm object>"));
  if (!file) {
    llvm::consumeError(file.takeError());
    out.errors.push_back({0, 0, "LLVM produced an object it cannot read back", ""});
    return;
  }
  for (const llvm::object::SymbolRef& symbol : (*file)->symbols()) {
    auto name = symbol.getName();
    auto flags = symbol.getFlags();
    auto type = symbol.getType();
    if (!name || !flags || !type) {
      if (!name) llvm::consumeError(name.takeError());
      if (!flags) llvm::consumeError(flags.takeError());
      if (!type) llvm::consumeError(type.takeError());
      continue;
    }
    if (name->empty() || *type == llvm::object::SymbolRef::ST_File || *type == llvm::object::SymbolRef::ST_Debug) {
      continue;
    }
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      out.undefined_symbols.insert(name->str());
    } else if (*flags & llvm::object::SymbolRef::SF_Global) {
      out.global_symbols.insert(name->str());
    } else if (*type != llvm::object::SymbolRef::ST_Other || !(*flags & llvm::object::SymbolRef::SF_FormatSpecific)) {
      out.local_symbols.insert(name->str());
    }
  }
}
}  // namespace

Assembled assemble(const std::string& text, const Machine& machine) {
  Assembled out;
  std::string error;
  if (!lookup(machine.triple, &error)) {
    out.errors.push_back({0, 0, "LLVM does not know the triple '" + machine.triple + "' (" + error + ")", ""});
    return out;
  }
  Tools tools(machine);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  bool ok = run_parser(tools, text, out.errors, true, [&](llvm::MCContext& context, const llvm::SourceMgr&) {
    std::unique_ptr<llvm::MCAsmBackend> backend(
        tools.target->createMCAsmBackend(*tools.subtarget, *tools.registers, tools.options));
    std::unique_ptr<llvm::MCObjectWriter> writer = backend->createObjectWriter(stream);
    std::unique_ptr<llvm::MCCodeEmitter> emitter(tools.target->createMCCodeEmitter(*tools.instructions, context));
    return std::unique_ptr<llvm::MCStreamer>(tools.target->createMCObjectStreamer(
        tools.triple, context, std::move(backend), std::move(writer), std::move(emitter), *tools.subtarget,
        /*RelaxAll=*/false, /*IncrementalLinkerCompatible=*/false, /*DWARFMustBeAtTheEnd=*/false));
  });
  if (!ok) return out;
  out.object.assign(buffer.begin(), buffer.end());
  read_symbols(out.object, out);
  if (tools.triple.isX86()) {
    std::vector<AsmDiagnostic> ignored;
    std::unique_ptr<llvm::MCCodeEmitter> emitter;
    run_parser(tools, text, ignored, false, [&](llvm::MCContext& context, const llvm::SourceMgr& sources) {
      emitter.reset(tools.target->createMCCodeEmitter(*tools.instructions, context));
      auto recorder = std::make_unique<EncodingRecorder>(context, *emitter, sources, out.needs);
      tools.target->createNullTargetStreamer(*recorder);
      return std::unique_ptr<llvm::MCStreamer>(std::move(recorder));
    });
  }
  return out;
}

std::string isa_of_triple(const std::string& triple) {
  llvm::Triple t(triple);
  if (t.getArch() == llvm::Triple::x86_64) return "x86_64";
  if (t.getArch() == llvm::Triple::aarch64) return "aarch64";
  return t.getArchName().str();
}

bool has_extension(const Machine& machine, const std::string& feature) {
  const llvm::Target* target = lookup(machine.triple);
  if (!target) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(machine.triple, machine.cpu, machine.features));
  return info->checkFeatures("+" + feature);
}

}  // namespace loom::asm_kind
