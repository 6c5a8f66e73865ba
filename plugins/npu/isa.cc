#include "isa.h"

#include <loom/support/error.h>

#include <cstring>
#include <sstream>

namespace loom::npu {

namespace {
template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(bytes, sizeof(T));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T get(size_t at) const {
    if (at + sizeof(T) > bytes_.size()) fail(at, "the stream ends early");
    T value;
    std::memcpy(&value, bytes_.data() + at, sizeof(T));
    return value;
  }
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    LOOM_THROW(Error) << "npu command stream: at byte " << at << ": " << what;
  }

 private:
  const std::string& bytes_;
};

const char* vec_op_name(int32_t op) {
  static const char* names[] = {"add",        "mul",      "max",   "add_channel", "mul_channel",     "relu",
                                "clip",       "copy",     "scale", "to_float",    "mul_add_channel", "quantize",
                                "dequantize", "scale_add"};
  return op >= 0 && op < kVecOps ? names[op] : "?";
}

// A dtype field's value, or a message for one that is not a dtype, or one
// a stream of version 1.0 cannot carry.
std::string dtype_problem(uint8_t dtype, uint16_t minor) {
  if (dtype >= kDtypes) return "unknown dtype " + std::to_string(dtype);
  if (dtype != 0 && minor == 0) {
    return std::string("dtype ") + dtype_name(static_cast<Dtype>(dtype)) +
           ", which version 1.0 does not have (the integer mode is version 1.1)";
  }
  return "";
}
}  // namespace

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32:
      return "fp32";
    case Dtype::kInt8:
      return "int8";
    case Dtype::kUInt8:
      return "uint8";
    case Dtype::kInt32:
      return "int32";
  }
  return "?";
}

int element_bytes(Dtype dtype) { return dtype == Dtype::kInt8 || dtype == Dtype::kUInt8 ? 1 : 4; }

float as_float(int32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

int32_t float_bits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

Engine engine_of(Opcode op) {
  switch (op) {
    case Opcode::kLoad:
    case Opcode::kStore:
    case Opcode::kFill:
      return Engine::kDma;
    case Opcode::kMatmul:
      return Engine::kMatrix;
    case Opcode::kVec:
    case Opcode::kPool:
      return Engine::kVector;
    default:
      return Engine::kAll;
  }
}

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kLoad:
      return "LOAD";
    case Opcode::kStore:
      return "STORE";
    case Opcode::kFill:
      return "FILL";
    case Opcode::kMatmul:
      return "MATMUL";
    case Opcode::kVec:
      return "VEC";
    case Opcode::kPool:
      return "POOL";
    case Opcode::kBarrier:
      return "BARRIER";
    case Opcode::kEnd:
      return "END";
  }
  return "?";
}

std::string encode(const Stream& s) {
  std::string out = "LNPU";
  put<uint16_t>(out, s.major);
  put<uint16_t>(out, s.minor);
  put<uint32_t>(out, kHeaderBytes);
  put<uint32_t>(out, static_cast<uint32_t>(s.buffers.size()));
  put<uint32_t>(out, static_cast<uint32_t>(s.instructions.size()));
  put<uint32_t>(out, s.scratchpad_words);
  put<uint64_t>(out, s.constants.size());
  put<uint64_t>(out, s.workspace_words);
  put<uint32_t>(out, s.inputs);
  put<uint32_t>(out, s.outputs);
  out.append(kHeaderBytes - out.size(), '\0');
  for (const Buffer& b : s.buffers) {
    put<uint8_t>(out, static_cast<uint8_t>(b.kind));
    put<uint8_t>(out, static_cast<uint8_t>(b.dtype));
    put<uint16_t>(out, 0);
    put<uint32_t>(out, b.index);
    put<uint64_t>(out, b.offset);
    put<uint64_t>(out, b.words);
    put<uint64_t>(out, 0);
  }
  for (const Instruction& i : s.instructions) {
    put<uint8_t>(out, static_cast<uint8_t>(i.opcode));
    put<uint8_t>(out, static_cast<uint8_t>(i.dtype));
    put<uint16_t>(out, i.wait);
    put<uint16_t>(out, i.signal);
    put<uint16_t>(out, 0);
    for (int32_t v : i.f) put<int32_t>(out, v);
  }
  out += s.constants;
  return out;
}

Stream decode(const std::string& bytes) {
  Reader r(bytes);
  if (bytes.size() < kHeaderBytes) r.fail(bytes.size(), "the stream is shorter than its 64-byte header");
  if (bytes.compare(0, 4, "LNPU") != 0) r.fail(0, "not an npu command stream (no magic 'LNPU')");
  Stream s;
  s.major = r.get<uint16_t>(4);
  s.minor = r.get<uint16_t>(6);
  if (s.major != kVersionMajor) {
    r.fail(4, "version " + std::to_string(s.major) + "." + std::to_string(s.minor) + ", this executor reads version " +
                  std::to_string(kVersionMajor) + ".x (recompile the model with this Loom)");
  }
  if (r.get<uint32_t>(8) != kHeaderBytes)
    r.fail(8, "header size " + std::to_string(r.get<uint32_t>(8)) + ", expected 64");
  uint32_t nbuf = r.get<uint32_t>(12), ninst = r.get<uint32_t>(16);
  s.scratchpad_words = r.get<uint32_t>(20);
  uint64_t nconst = r.get<uint64_t>(24);
  s.workspace_words = r.get<uint64_t>(32);
  s.inputs = r.get<uint32_t>(40);
  s.outputs = r.get<uint32_t>(44);
  // Sizes first, in 128-bit arithmetic's stead: each count is bounded by the length.
  uint64_t need = kHeaderBytes;
  if (nbuf > bytes.size() / kBufferBytes || ninst > bytes.size() / kInstructionBytes || nconst > bytes.size()) {
    r.fail(12, "the header counts " + std::to_string(nbuf) + " buffers and " + std::to_string(ninst) +
                   " instructions, more than the stream's " + std::to_string(bytes.size()) + " bytes hold");
  }
  need += uint64_t{nbuf} * kBufferBytes + uint64_t{ninst} * kInstructionBytes + nconst;
  if (need != bytes.size()) {
    r.fail(12, "the header's sizes add up to " + std::to_string(need) + " bytes, the stream has " +
                   std::to_string(bytes.size()));
  }
  size_t at = kHeaderBytes;
  for (uint32_t k = 0; k < nbuf; ++k, at += kBufferBytes) {
    Buffer b;
    uint8_t kind = r.get<uint8_t>(at), dtype = r.get<uint8_t>(at + 1);
    if (kind > 3) r.fail(at, "buffer " + std::to_string(k) + " has unknown kind " + std::to_string(kind));
    std::string problem = dtype_problem(dtype, s.minor);
    if (!problem.empty()) r.fail(at + 1, "buffer " + std::to_string(k) + " has " + problem);
    b.kind = static_cast<BufferKind>(kind);
    b.dtype = static_cast<Dtype>(dtype);
    b.index = r.get<uint32_t>(at + 4);
    b.offset = r.get<uint64_t>(at + 8);
    b.words = r.get<uint64_t>(at + 16);
    uint64_t size = static_cast<uint64_t>(element_bytes(b.dtype));
    if (b.kind == BufferKind::kConstant &&
        (b.offset > nconst || b.offset % 4 != 0 || b.words > (nconst - b.offset) / size)) {
      r.fail(at + 8, "constant buffer " + std::to_string(k) + " lies outside the constant section");
    }
    if (b.kind == BufferKind::kWorkspace &&
        (b.offset > s.workspace_words || (b.words + 4 / size - 1) / (4 / size) > s.workspace_words - b.offset)) {
      r.fail(at + 8, "workspace buffer " + std::to_string(k) + " lies outside the workspace");
    }
    if ((b.kind == BufferKind::kInput && b.index >= s.inputs) ||
        (b.kind == BufferKind::kOutput && b.index >= s.outputs)) {
      r.fail(at + 4, "buffer " + std::to_string(k) + " names region argument " + std::to_string(b.index) +
                         ", which it has not");
    }
    s.buffers.push_back(b);
  }
  for (uint32_t k = 0; k < ninst; ++k, at += kInstructionBytes) {
    Instruction i;
    uint8_t op = r.get<uint8_t>(at), dtype = r.get<uint8_t>(at + 1);
    if (op < 1 || op > 8) r.fail(at, "instruction " + std::to_string(k) + " has unknown opcode " + std::to_string(op));
    std::string problem = dtype_problem(dtype, s.minor);
    if (!problem.empty()) r.fail(at + 1, "instruction " + std::to_string(k) + " has " + problem);
    i.opcode = static_cast<Opcode>(op);
    i.dtype = static_cast<Dtype>(dtype);
    i.wait = r.get<uint16_t>(at + 2);
    i.signal = r.get<uint16_t>(at + 4);
    for (int j = 0; j < kFields; ++j) i.f[j] = r.get<int32_t>(at + 8 + 4 * j);
    if ((i.opcode == Opcode::kLoad || i.opcode == Opcode::kStore) &&
        (i.f[field::kBuffer] < 0 || static_cast<uint32_t>(i.f[field::kBuffer]) >= nbuf)) {
      r.fail(at + 8, "instruction " + std::to_string(k) + " names buffer " + std::to_string(i.f[field::kBuffer]) +
                         " of " + std::to_string(nbuf));
    }
    s.instructions.push_back(i);
  }
  if (s.instructions.empty() || s.instructions.back().opcode != Opcode::kEnd)
    r.fail(at, "the stream does not end with END");
  s.constants = bytes.substr(at);
  return s;
}

std::string disassemble(const Stream& s) {
  std::ostringstream out;
  out << "; npu command stream " << s.major << "." << s.minor << ": " << s.instructions.size() << " instructions, "
      << s.buffers.size() << " buffers, scratchpad " << s.scratchpad_words << " words, workspace " << s.workspace_words
      << " words, constants " << s.constants.size() << " bytes\n";
  static const char* kinds[] = {"input", "output", "constant", "workspace"};
  for (size_t k = 0; k < s.buffers.size(); ++k) {
    const Buffer& b = s.buffers[k];
    out << ";   buffer " << k << ": " << kinds[static_cast<int>(b.kind)];
    if (b.kind == BufferKind::kInput || b.kind == BufferKind::kOutput) out << " " << b.index;
    if (b.kind == BufferKind::kConstant || b.kind == BufferKind::kWorkspace) out << " at " << b.offset;
    if (b.dtype == Dtype::kFloat32)
      out << ", " << b.words << " words\n";
    else
      out << ", " << b.words << " " << dtype_name(b.dtype) << "\n";
  }
  for (size_t k = 0; k < s.instructions.size(); ++k) {
    const Instruction& i = s.instructions[k];
    const auto& f = i.f;
    out << "  " << k << "\t" << opcode_name(i.opcode);
    if (i.dtype != Dtype::kFloat32) out << "." << dtype_name(i.dtype);
    using namespace field;
    switch (i.opcode) {
      case Opcode::kLoad:
      case Opcode::kStore:
        out << "\tbuf" << f[kBuffer] << "+" << f[kOffset] << (i.opcode == Opcode::kLoad ? " -> " : " <- ") << "spad "
            << f[kSpad] << " [" << f[kN2] << "x" << f[kN1] << "x" << f[kN0] << "] mem strides (" << f[kMemS2] << ","
            << f[kMemS1] << "," << f[kMemS0] << ") spad strides (" << f[kSpadS2] << "," << f[kSpadS1] << ","
            << f[kSpadS0] << ")";
        break;
      case Opcode::kFill:
        out << "\tspad " << f[kFillSpad] << " n=" << f[kFillN] << " value=";
        if (i.dtype == Dtype::kFloat32)
          out << as_float(f[kFillValue]);
        else
          out << f[kFillValue];
        break;
      case Opcode::kMatmul: {
        static const char* modes[] = {"matrix", "conv", "depthwise"};
        int mode = f[kMode];
        out << "\t" << (mode >= 0 && mode <= 2 ? modes[mode] : "?") << " M=" << f[kM] << " N=" << f[kN]
            << " K=" << f[kK] << " a=" << f[kA] << " b=" << f[kB] << " c=" << f[kC]
            << (f[kAccumulate] ? " accumulate" : "");
        if (f[kZeroA] || f[kZeroB]) out << " zero points " << f[kZeroA] << "," << f[kZeroB];
        if (mode != 0) {
          out << " in " << f[kCin] << "x" << f[kH] << "x" << f[kW] << " window " << f[kKh] << "x" << f[kKw]
              << " stride " << f[kSh] << "," << f[kSw] << " dilation " << f[kDh] << "," << f[kDw] << " Wo=" << f[kWo];
        }
        break;
      }
      case Opcode::kVec:
        out << "\t" << vec_op_name(f[kOp]) << " n=" << f[kVecN] << " dst=" << f[kDst] << " src0=" << f[kSrc0];
        if (f[kOp] <= 4) out << " src1=" << f[kSrc1];
        if (f[kOp] == 3 || f[kOp] == 4) out << " channels=" << f[kChannels] << " inner=" << f[kInner];
        if (f[kOp] == 6) out << " [" << as_float(f[kImm0]) << ", " << as_float(f[kImm1]) << "]";
        if (f[kOp] == 8) out << " x" << as_float(f[kImm0]);
        if (f[kOp] == 10)
          out << " src1=" << f[kSrc1] << " src2=" << f[kSrc2] << " channels=" << f[kChannels] << " inner=" << f[kInner];
        if (f[kOp] == 11 || f[kOp] == 12) out << " scale=" << as_float(f[kImm0]) << " zero=" << f[kImm1];
        if (f[kOp] == 13) out << " x" << as_float(f[kImm0]) << " + src1=" << f[kSrc1];
        break;
      case Opcode::kPool:
        out << "\t" << (f[kPoolMode] == 0 ? "max" : "sum") << " " << f[kPoolC] << "x" << f[kPoolH] << "x" << f[kPoolW]
            << " window " << f[kPoolKh] << "x" << f[kPoolKw] << " stride " << f[kPoolSh] << "," << f[kPoolSw] << " -> "
            << f[kPoolHo] << "x" << f[kPoolWo] << " src=" << f[kPoolSrc] << " dst=" << f[kPoolDst];
        break;
      default:
        break;
    }
    auto semaphores = [](uint16_t mask) {
      std::string text;
      for (int k = 0; k < kSemaphores; ++k)
        if (mask >> k & 1) text += (text.empty() ? "s" : ",s") + std::to_string(k);
      return text;
    };
    if (i.wait) out << "  wait " << semaphores(i.wait);
    if (i.signal) out << "  signal " << semaphores(i.signal);
    out << "\n";
  }
  return out.str();
}

}  // namespace loom::npu
