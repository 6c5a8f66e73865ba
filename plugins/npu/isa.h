// The reference NPU's command stream (docs/npu-spec.md): instructions,
// buffers, the binary format with its versioned header, reading it back
// with every check the spec lists, and a disassembler.
#ifndef LOOM_PLUGINS_NPU_ISA_H_
#define LOOM_PLUGINS_NPU_ISA_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::npu {

constexpr uint16_t kVersionMajor = 1;
constexpr uint16_t kVersionMinor = 1;  // 1.1: the integer mode
constexpr size_t kHeaderBytes = 64;
constexpr size_t kBufferBytes = 32;
constexpr size_t kInstructionBytes = 96;
constexpr int kFields = 22;
constexpr int kSemaphores = 16;

enum class Opcode : uint8_t {
  kLoad = 1,
  kStore = 2,
  kFill = 3,
  kMatmul = 4,
  kVec = 5,
  kPool = 6,
  kBarrier = 7,
  kEnd = 8
};
// What a buffer's elements are in device memory, and how an instruction
// reads its scratchpad words (fp32, or int32 for the integer dtypes).
enum class Dtype : uint8_t { kFloat32 = 0, kInt8 = 1, kUInt8 = 2, kInt32 = 3 };
constexpr uint8_t kDtypes = 4;
enum class VecOp : int32_t {
  kAdd = 0,
  kMul,
  kMax,
  kAddChannel,
  kMulChannel,
  kRelu,
  kClip,
  kCopy,
  kScale,
  // Version 1.1 (the integer mode):
  kToFloat,
  kMulAddChannel,
  kQuantize,
  kDequantize,
  kScaleAdd
};
constexpr int32_t kVecOps = 14;
enum class MatmulMode : int32_t { kMatrix = 0, kConv = 1, kDepthwise = 2 };
enum class BufferKind : uint8_t { kInput = 0, kOutput = 1, kConstant = 2, kWorkspace = 3 };
enum class Engine { kDma, kMatrix, kVector, kAll };

struct Instruction {
  Opcode opcode = Opcode::kEnd;
  Dtype dtype = Dtype::kFloat32;
  uint16_t wait = 0;    // semaphores to take one count from before starting
  uint16_t signal = 0;  // semaphores to add one count to on completion
  std::array<int32_t, kFields> f{};
};

// The fields of each opcode, by name (docs/npu-spec.md, "Instructions").
namespace field {
// LOAD / STORE: device memory (buffer, offset) <-> scratchpad, 3-D strided.
enum Dma { kBuffer = 0, kOffset, kSpad, kN0, kN1, kN2, kMemS0, kMemS1, kMemS2, kSpadS0, kSpadS1, kSpadS2 };
enum Fill { kFillSpad = 0, kFillN, kFillValue };
enum Matmul {
  kMode = 0,
  kM,
  kN,
  kK,
  kA,
  kB,
  kC,
  kAccumulate,
  kCin,
  kH,
  kW,
  kKh,
  kKw,
  kSh,
  kSw,
  kDh,
  kDw,
  kWo,
  kZeroA,  // int8: a's zero point
  kZeroB   // int8: b's zero point
};
enum Vec { kOp = 0, kVecN, kDst, kSrc0, kSrc1, kChannels, kInner, kImm0, kImm1, kSrc2 };
enum Pool {
  kPoolMode = 0,
  kPoolC,
  kPoolH,
  kPoolW,
  kPoolKh,
  kPoolKw,
  kPoolSh,
  kPoolSw,
  kPoolHo,
  kPoolWo,
  kPoolSrc,
  kPoolDst
};
}  // namespace field

struct Buffer {
  BufferKind kind = BufferKind::kInput;
  Dtype dtype = Dtype::kFloat32;
  uint32_t index = 0;   // input/output position
  uint64_t offset = 0;  // constant section bytes / workspace words
  uint64_t words = 0;   // elements of `dtype`
};

struct Stream {
  uint16_t major = kVersionMajor, minor = kVersionMinor;
  uint32_t scratchpad_words = 0;  // what it needs
  uint64_t workspace_words = 0;
  uint32_t inputs = 0, outputs = 0;
  std::vector<Buffer> buffers;
  std::vector<Instruction> instructions;  // the last kEnd
  std::string constants;                  // the constant section
};

std::string encode(const Stream& stream);
// The stream in `bytes`, checked (magic, major version, sizes, opcodes,
// dtypes, buffer indices, END last); an Error names the byte offset.
Stream decode(const std::string& bytes);

Engine engine_of(Opcode op);
const char* dtype_name(Dtype dtype);
int element_bytes(Dtype dtype);  // in device memory
const char* opcode_name(Opcode op);
// The header, the buffers, then one line per instruction: "  9  MATMUL  conv
// M=8 N=784 K=9 a=1800 b=0 c=1944 ...  wait s0  signal s1,s2".
std::string disassemble(const Stream& stream);

float as_float(int32_t bits);
int32_t float_bits(float value);

}  // namespace loom::npu

#endif  // LOOM_PLUGINS_NPU_ISA_H_
