// Prim IR -> LLVM IR; see codegen.h for the contract.
#include "codegen.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <loom/arith/simplify.h>
#include <loom/ir/text.h>
#include <loom/object/structural.h>
#include <loom/object/traversal.h>
#include <loom/runtime/c_backend_api.h>
#include <loom/runtime/device_api.h>
#include <loom/support/stack.h>
#include <loom/tir/function.h>
#include <loom/tir/functor.h>
#include <loom/tir/intrinsic.h>
#include <loom/tir/util.h>

#include "math.h"

namespace loom::llvm_backend {
namespace {

using llvm::Value;

// The host ABI's layouts come from its C header (loom/runtime/c_backend_api.h
// and dlpack.h, which it includes): byte offsets taken with offsetof, so the
// generated code and the runtime cannot disagree.
constexpr uint64_t kSetLastError = offsetof(LoomHostApi, set_last_error);
constexpr uint64_t kParallelFor = offsetof(LoomHostApi, parallel_for);
constexpr uint64_t kGetFunction = offsetof(LoomHostApi, get_function);
constexpr uint64_t kCallFunction = offsetof(LoomHostApi, call_function);
constexpr uint64_t kAllocWorkspace = offsetof(LoomHostApi, alloc_workspace);
constexpr uint64_t kFreeWorkspace = offsetof(LoomHostApi, free_workspace);
constexpr uint64_t kTensorData = offsetof(DLTensor, data);
constexpr uint64_t kTensorDeviceType = offsetof(DLTensor, device) + offsetof(DLDevice, device_type);
constexpr uint64_t kTensorNdim = offsetof(DLTensor, ndim);
constexpr uint64_t kTensorDtype = offsetof(DLTensor, dtype);
constexpr uint64_t kTensorShape = offsetof(DLTensor, shape);
constexpr uint64_t kTensorStrides = offsetof(DLTensor, strides);
constexpr uint64_t kTensorByteOffset = offsetof(DLTensor, byte_offset);
static_assert(sizeof(DLDataType) == 4, "the dtype check compares DLDataType as one 32-bit word");
// Allocations of at most this many constant bytes live on the stack.
constexpr int64_t kMaxStackBytes = 64 * 1024;

using tir::is_float;
using tir::is_unsigned;
using tir::scalar_of;

std::string symbol_for(const std::string& name) {
  std::string out = "__loom_fn_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// The bits of the bfloat16 nearest to v (ties to even; a NaN quiet),
// rounded once as the cast from float64 does: to float32 rounding to odd,
// then to nearest even.
uint16_t bfloat16_bits(double v) {
  if (std::isnan(v)) return 0x7FC0;
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (static_cast<double>(f) != v && !std::isinf(f)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) bits -= 1;  // toward zero
    bits |= 1;
  }
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

// The x86 vector instructions the codegen calls by name: maxps/minps
// (SSE: 4 floats, AVX: 8, AVX-512: 16), pmaddwd (SSE2: 4 int32 sums,
// AVX2: 8, AVX-512BW: 16), vdpbf16ps (AVX-512 BF16: 16 float32 sums,
// with AVX-512VL also 4 and 8) and vpdpbusd (AVX-512 VNNI: 16 int32 sums,
// with AVX-512VL also 4 and 8; AVX-VNNI: 4 and 8); none elsewhere.
struct X86Features {
  bool sse = false, avx = false, avx512 = false;
  bool sse2 = false, avx2 = false, avx512bw = false;
  bool avx512vl = false, avx512bf16 = false;
  bool avx512vnni = false, avxvnni = false;
  static X86Features of(const llvm::TargetMachine& machine) {
    X86Features x;
    if (!machine.getTargetTriple().isX86()) return x;
    const llvm::MCSubtargetInfo* info = machine.getMCSubtargetInfo();
    x.sse = info->checkFeatures("+sse");
    x.avx = info->checkFeatures("+avx");
    x.avx512 = info->checkFeatures("+avx512f");
    x.sse2 = info->checkFeatures("+sse2");
    x.avx2 = info->checkFeatures("+avx2");
    x.avx512bw = info->checkFeatures("+avx512bw");
    x.avx512vl = info->checkFeatures("+avx512vl");
    x.avx512bf16 = info->checkFeatures("+avx512bf16");
    x.avx512vnni = info->checkFeatures("+avx512vnni");
    x.avxvnni = info->checkFeatures("+avxvnni");
    return x;
  }
};

class FunctionCodegen {
 public:
  FunctionCodegen(llvm::Module& module, std::string name, X86Features x86 = {})
      : context_(module.getContext()), module_(module), b_(module.getContext()), name_(std::move(name)), x86_(x86) {
    // Float arithmetic is as written: each operation rounded on its own.
    // A reduction's update and the math functions' polynomials are the
    // exceptions (store, call): there a * b + c may become one fused
    // multiply-add (as OpenBLAS and NumPy do).  An epilogue's
    // scale-and-bias (a quantized layer's requantization, dequantize(a)
    // + dequantize(b)) keeps its two roundings, so its bits are the
    // equations' on every CPU, FMA or not.
  }

  // Emits the body function and the ABI entry `symbol`.
  void emit(const tir::PrimFunc& func, const std::string& symbol);

 private:
  [[noreturn]] void fail(const std::string& what) const { LOOM_THROW(Error) << "llvm: @" << name_ << ": " << what; }

  // ---- types -------------------------------------------------------------------
  llvm::Type* scalar_type(DataType t) const {
    switch (t.code) {
      case DataType::kBool:
        return b_.getInt1Ty();
      case DataType::kInt:
      case DataType::kUInt:
        return llvm::Type::getIntNTy(context_, t.bits);
      case DataType::kFloat:
        if (t.bits == 16) return b_.getHalfTy();
        if (t.bits == 32) return b_.getFloatTy();
        if (t.bits == 64) return b_.getDoubleTy();
        break;
      case DataType::kBFloat:
        // Its bits: LLVM's bfloat values would be promoted to float in
        // selects and phis and narrowed by compiler-rt's __truncsfbf2,
        // which is not linked; arithmetic converts (cast, binary).
        return b_.getInt16Ty();
      case DataType::kHandle:
        return b_.getPtrTy();
      default:
        break;
    }
    fail("no LLVM type for " + t.to_string());
  }
  llvm::Type* type(DataType t) const {
    llvm::Type* s = scalar_type(scalar_of(t));
    return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
  }
  // Booleans are bytes in memory.
  llvm::Type* memory_type(DataType t) const {
    llvm::Type* s = t.code == DataType::kBool ? b_.getInt8Ty() : scalar_type(scalar_of(t));
    return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
  }

  // ---- the runtime -------------------------------------------------------------
  // The function pointer at byte `offset` of the host API.
  Value* api_function(uint64_t offset) {
    llvm::GlobalVariable* slot = module_.getGlobalVariable("__loom_host_api");
    if (!slot) {
      slot = new llvm::GlobalVariable(module_, b_.getPtrTy(), false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                      "__loom_host_api");
    }
    Value* api = b_.CreateLoad(b_.getPtrTy(), slot, "api");
    return b_.CreateLoad(b_.getPtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), api, offset));
  }
  llvm::Constant* string_constant(const std::string& text) {
    auto found = strings_.find(text);
    if (found != strings_.end()) return found->second;
    return strings_[text] = b_.CreateGlobalStringPtr(text, ".str", 0, &module_);
  }
  // set_last_error(message) and return -1.
  void emit_fail(const std::string& message) {  // (no formatting)
    llvm::FunctionType* type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    b_.CreateCall(type, api_function(kSetLastError), {string_constant(message)});
    b_.CreateRet(b_.getInt32(-1));
  }
  // The same with one integer formatted into the message at its "%lld";
  // every other '%' (a variable's name) is escaped for snprintf.
  void emit_fail(const std::string& message, Value* number) {
    auto escape = [](const std::string& text) {
      std::string out;
      for (char c : text) out += c == '%' ? std::string("%%") : std::string(1, c);
      return out;
    };
    size_t at = message.find("%lld");
    std::string format = at == std::string::npos
                             ? escape(message)
                             : escape(message.substr(0, at)) + "%lld" + escape(message.substr(at + 4));
    llvm::FunctionCallee snprintf = module_.getOrInsertFunction(
        "snprintf", llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getPtrTy()}, true));
    llvm::AllocaInst* text = entry_alloca(llvm::ArrayType::get(b_.getInt8Ty(), 512), 1);
    b_.CreateCall(snprintf,
                  {text, b_.getInt64(512), string_constant(format), b_.CreateSExtOrTrunc(number, b_.getInt64Ty())});
    llvm::FunctionType* type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    b_.CreateCall(type, api_function(kSetLastError), {text});
    b_.CreateRet(b_.getInt32(-1));
  }
  // Branches to a new block unless `ok`; the failing block reports `fail`.
  void check(Value* ok, const std::function<void()>& fail_block) {
    llvm::BasicBlock* pass = llvm::BasicBlock::Create(context_, "ok", fn_);
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(context_, "bad", fn_);
    b_.CreateCondBr(ok, pass, bad, llvm::MDBuilder(context_).createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(bad);
    fail_block();
    b_.SetInsertPoint(pass);
  }

  llvm::AllocaInst* entry_alloca(llvm::Type* type, uint64_t align, Value* count = nullptr) {
    llvm::IRBuilder<> entry(entry_block_, entry_block_->begin());
    llvm::AllocaInst* a = entry.CreateAlloca(type, count);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ---- the ABI entry -----------------------------------------------------------
  void emit_entry(const tir::PrimFunc& func, const std::string& symbol, llvm::Function* body);

  // ---- statements --------------------------------------------------------------
  void stmt(const tir::Stmt& s) {
    with_stack([&] { stmt_here(s); });  // one level of stack per level of nesting
  }
  void stmt_here(const tir::Stmt& s);
  void loop(const tir::ForNode* op);
  void serial_loop(Value* begin, Value* end, const tir::ForNode* op, const std::function<void(Value*)>& body);
  void parallel_loop(const tir::ForNode* op);
  void allocate(const tir::AllocateNode* op);
  void launch(const tir::CallNode* op);
  void store(const tir::BufferStoreNode* op);
  Value* contracted(const std::function<Value*()>& emit);

  // ---- expressions -------------------------------------------------------------
  Value* expr(const tir::PrimExpr& e) {
    return with_stack([&] { return expr_here(e); });  // one level of stack per level of nesting
  }
  Value* expr_here(const tir::PrimExpr& e);
  Value* binary(const tir::BinaryOpNode* op);
  // op on the compiled operands a and b, of dtype t.
  Value* binary(const tir::BinaryOpNode* op, Value* a, Value* b, DataType t);
  Value* cast(DataType to, DataType from, Value* v);
  Value* x86_min_max(bool min, Value* a, Value* b);
  // dot2_i16(a0, b0, a1, b1), its arguments emitted.
  Value* dot2_i16(const tir::CallNode* op, std::vector<Value*> args);
  // acc + dot2_bf16(a0, b0, a1, b1), its arguments emitted (acc null: 0).
  Value* dot2_bf16(const tir::CallNode* op, std::vector<Value*> args, Value* acc);
  // acc + dot4_u8i8(a0, b0, .., a3, b3), its arguments emitted (acc null: 0).
  Value* dot4_u8i8(const tir::CallNode* op, std::vector<Value*> args, Value* acc);
  // The groups (x0, x1, ..) of each lane side by side, g * lanes elements
  // of x0's type: xs are op's emitted arguments at `positions` (g of
  // them; op dot2_i16, dot2_bf16 or dot4_u8i8), of one type and op's lanes.
  Value* interleaved(const tir::CallNode* op, const std::vector<size_t>& positions, const std::vector<Value*>& xs);
  Value* call(const tir::CallNode* op);
  Value* libm_call(const std::string& name, Value* x, llvm::Type* t);
  Value* splat(Value* v, int lanes) { return lanes > 1 ? b_.CreateVectorSplat(lanes, v) : v; }
  // <0, stride, 2 stride, ...>: the lanes' offsets from the first element.
  llvm::Constant* step_offsets(int64_t stride, int lanes) {
    std::vector<llvm::Constant*> steps;
    for (int k = 0; k < lanes; ++k) steps.push_back(b_.getInt64(k * stride));
    return llvm::ConstantVector::get(steps);
  }
  // Loads with a constant stride up to this are one wide load and a
  // shuffle; longer strides gather.
  static constexpr int64_t kMaxShuffledStride = 4;
  Value* constant(DataType t, double value) {
    llvm::Type* s = scalar_type(scalar_of(t));
    llvm::Constant* c = is_float(t)
                            ? llvm::ConstantFP::get(s, value)
                            : llvm::ConstantInt::get(s, static_cast<uint64_t>(static_cast<int64_t>(value)), true);
    return t.lanes > 1 ? llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(t.lanes), c) : c;
  }
  // The element address of buffer[indices] (row-major over the buffer's
  // shape, or its strides).  For a vector access whose flat index is a
  // ramp with a constant stride, *stride is that stride and the pointer is
  // the first element's; otherwise *stride is 0 and it is a vector of
  // pointers.
  Value* element_pointer(const tir::BufferNode* buffer, const Array& indices, int lanes, int64_t* stride);
  Value* load(const tir::BufferLoadNode* op);

  Value* var(const tir::VarNode* v) const {
    auto found = values_.find(v);
    if (found == values_.end()) fail("%" + v->name + " is used outside its scope (or is not a parameter)");
    return found->second;
  }

  llvm::LLVMContext& context_;
  llvm::Module& module_;
  mutable llvm::IRBuilder<> b_;
  std::string name_;
  X86Features x86_;
  llvm::Function* fn_ = nullptr;
  int device_type_ = kDLCPU;  // where the buffers are (tir::device_type_of)
  llvm::BasicBlock* entry_block_ = nullptr;
  std::unordered_map<const tir::VarNode*, Value*> values_;
  std::map<std::string, llvm::Constant*> strings_;
  Value* ret_ = nullptr;       // LoomValue* of the body; null in outlined closures
  Value* ret_code_ = nullptr;  // int32_t*
  int outlined_ = 0;
  // The loops around the statement being emitted, outermost first.
  std::vector<const tir::ForNode*> enclosing_;
};

// ---- the ABI entry ------------------------------------------------------------------

void FunctionCodegen::emit(const tir::PrimFunc& func, const std::string& symbol) {
  device_type_ = tir::device_type_of(*func.get());
  // The body: buffer pointers (noalias), then scalar parameters.
  std::vector<llvm::Type*> types;
  std::vector<const tir::VarNode*> order;
  for (const Any& p : func->params) {
    if (const auto* b = p.as_object_ref().as<tir::BufferNode>()) {
      types.push_back(b_.getPtrTy());
      order.push_back(b->data.get());
    }
  }
  size_t num_buffers = types.size();
  for (const tir::VarNode* v : tir::entry_scalars(func)) {
    types.push_back(type(v->dtype));
    order.push_back(v);
  }
  types.push_back(b_.getPtrTy());  // ret: LoomValue*
  types.push_back(b_.getPtrTy());  // ret_code: int32_t*
  llvm::FunctionType* body_type = llvm::FunctionType::get(b_.getInt32Ty(), types, false);
  llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, symbol + ".body", module_);
  // (A host function's device buffers are handles it passes to launches.)
  for (size_t i = 0; i < num_buffers && device_type_ == kDLCPU; ++i) {
    body->addParamAttr(i, llvm::Attribute::NoAlias);
    body->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  fn_ = body;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", body);
  b_.SetInsertPoint(entry_block_);
  for (size_t i = 0; i < order.size(); ++i) values_[order[i]] = body->getArg(i);
  ret_ = body->getArg(order.size());
  ret_code_ = body->getArg(order.size() + 1);
  stmt(func->body);
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateRet(b_.getInt32(0));
  emit_entry(func, symbol, body);
}

void FunctionCodegen::emit_entry(const tir::PrimFunc& func, const std::string& symbol, llvm::Function* body) {
  llvm::Type* p = b_.getPtrTy();
  llvm::FunctionType* abi = llvm::FunctionType::get(b_.getInt32Ty(), {p, p, b_.getInt32Ty(), p, p, p}, false);
  llvm::Function* entry = llvm::Function::Create(abi, llvm::Function::ExternalLinkage, symbol, module_);
  fn_ = entry;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", entry);
  b_.SetInsertPoint(entry_block_);
  Value* args = entry->getArg(0);
  Value* codes = entry->getArg(1);
  Value* count = entry->getArg(2);
  Value* ret = entry->getArg(3);
  Value* ret_code = entry->getArg(4);
  values_.clear();

  const auto& params = func->params;
  std::vector<tir::Buffer> buffers = func.buffer_params();
  size_t num_params = params.size(), num_buffers = buffers.size();
  // Called with every parameter, or (destination passing) with the
  // buffers only, the scalars then come from the buffers' shapes.
  Value* full = b_.CreateICmpEQ(count, b_.getInt32(static_cast<int32_t>(num_params)));
  Value* dps = b_.CreateICmpEQ(count, b_.getInt32(static_cast<int32_t>(num_buffers)));
  check(b_.CreateOr(full, dps), [&] {
    emit_fail(
        "takes " + std::to_string(num_buffers) + " tensors (or " + std::to_string(num_params) + " values), got %lld",
        count);
  });
  llvm::Type* value_type = b_.getIntNTy(8 * sizeof(LoomValue));
  auto arg_at = [&](Value* index) { return b_.CreateGEP(value_type, args, index); };
  auto code_at = [&](Value* index) {
    return b_.CreateLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), codes, index));
  };
  auto field = [&](Value* tensor, uint64_t offset, llvm::Type* t) {
    return b_.CreateLoad(t, b_.CreateConstGEP1_64(b_.getInt8Ty(), tensor, offset));
  };

  // Buffers: check and bind their data pointers.
  std::vector<Value*> tensors;
  size_t next = 0;
  for (size_t i = 0; i < num_params; ++i) {
    const auto* buffer = params[i].as_object_ref().as<tir::BufferNode>();
    if (!buffer) continue;
    Value* index =
        b_.CreateSelect(full, b_.getInt32(static_cast<int32_t>(i)), b_.getInt32(static_cast<int32_t>(next++)));
    std::string what = "argument %lld (buffer '" + buffer->name + "')";
    check(b_.CreateICmpEQ(code_at(index), b_.getInt32(kLoomDLTensor)),
          [&] { emit_fail(what + " must be a tensor", index); });
    Value* tensor = b_.CreateLoad(p, arg_at(index));
    std::string device = runtime::device_name(device_type_);
    check(b_.CreateICmpEQ(field(tensor, kTensorDeviceType, b_.getInt32Ty()), b_.getInt32(device_type_)), [&] {
      emit_fail(what + (device_type_ == kDLCPU ? " is not on the CPU" : " is not on the " + device + " device"), index);
    });
    if (device_type_ != kDLCPU) {
      check(b_.CreateICmpEQ(field(tensor, kTensorByteOffset, b_.getInt64Ty()), b_.getInt64(0)),
            [&] { emit_fail(what + " has a byte offset, which a " + device + " buffer cannot have", index); });
    }
    DataType dt = buffer->dtype;
    uint32_t packed = dt.code | (uint32_t{dt.bits} << 8) | (uint32_t{dt.lanes} << 16);
    check(b_.CreateICmpEQ(field(tensor, kTensorDtype, b_.getInt32Ty()), b_.getInt32(packed)),
          [&] { emit_fail(what + " must have dtype " + dt.to_string(), index); });
    Value* ndim = field(tensor, kTensorNdim, b_.getInt32Ty());
    check(b_.CreateICmpEQ(ndim, b_.getInt32(static_cast<int32_t>(buffer->shape.size()))), [&] {
      emit_fail("buffer '" + buffer->name + "' has %lld dimensions, expected " + std::to_string(buffer->shape.size()),
                ndim);
    });
    // Compact row-major: strides null, or the products of the later
    // dimensions (dimensions of size 1 may have any stride, and so may
    // every dimension of an empty tensor: PyTorch gives (0, 0) strides
    // (1, 1)).
    Value* shape = field(tensor, kTensorShape, p);
    Value* strides = field(tensor, kTensorStrides, p);
    int rank = static_cast<int>(buffer->shape.size());
    if (rank > 0) {
      llvm::BasicBlock* strided = llvm::BasicBlock::Create(context_, "strided", fn_);
      llvm::BasicBlock* compact = llvm::BasicBlock::Create(context_, "compact", fn_);
      b_.CreateCondBr(b_.CreateIsNull(strides), compact, strided);
      b_.SetInsertPoint(strided);
      auto extent_at = [&](int d) {
        return b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), shape, d));
      };
      Value* empty = b_.getFalse();
      for (int d = 0; d < rank; ++d) empty = b_.CreateOr(empty, b_.CreateICmpEQ(extent_at(d), b_.getInt64(0)));
      Value* expected = b_.getInt64(1);
      for (int d = rank - 1; d >= 0; --d) {
        Value* extent = extent_at(d);
        Value* stride = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), strides, d));
        Value* ok =
            b_.CreateOr(empty, b_.CreateOr(b_.CreateICmpEQ(extent, b_.getInt64(1)), b_.CreateICmpEQ(stride, expected)));
        check(ok, [&] { emit_fail(what + " is not compact (row-major)", index); });
        expected = b_.CreateMul(expected, extent);
      }
      b_.CreateBr(compact);
      b_.SetInsertPoint(compact);
    }
    Value* data = field(tensor, kTensorData, p);
    data = b_.CreateGEP(b_.getInt8Ty(), data, field(tensor, kTensorByteOffset, b_.getInt64Ty()));
    values_[buffer->data.get()] = data;
    tensors.push_back(tensor);
  }
  // Scalars: from the arguments (all parameters given) or from the first
  // buffer dimension that is the variable.
  for (const tir::VarNode* v : tir::entry_scalars(func)) {
    size_t i = 0;
    while (i < num_params && params[i].object() != v) ++i;
    llvm::Type* t = type(v->dtype);
    Value* from_shape = nullptr;
    if (auto bound = tir::bind_from_shapes(buffers, v)) {
      Value* shape = field(tensors[bound->buffer], kTensorShape, p);
      from_shape = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), shape, bound->dim));
      if (bound->offset != 0) from_shape = b_.CreateSub(from_shape, b_.getInt64(bound->offset));
      // The division is exact when the shapes are right, which every
      // dimension's check below confirms.
      if (bound->scale != 1) from_shape = b_.CreateSDiv(from_shape, b_.getInt64(bound->scale));
    }
    if (i == num_params) {  // bound only by a shape
      values_[v] = b_.CreateSExtOrTrunc(from_shape, t);
      continue;
    }
    llvm::BasicBlock* given = llvm::BasicBlock::Create(context_, "given", fn_);
    llvm::BasicBlock* derived = llvm::BasicBlock::Create(context_, "derived", fn_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(context_, "scalar", fn_);
    b_.CreateCondBr(full, given, derived);
    b_.SetInsertPoint(given);
    Value* index = b_.getInt32(static_cast<int32_t>(i));
    Value* code = code_at(index);
    Value* slot = arg_at(index);
    Value* as_given;
    if (is_float(v->dtype)) {
      Value* as_float = b_.CreateLoad(b_.getDoubleTy(), slot);
      Value* as_int = b_.CreateSIToFP(b_.CreateLoad(b_.getInt64Ty(), slot), b_.getDoubleTy());
      as_given = b_.CreateFPCast(b_.CreateSelect(b_.CreateICmpEQ(code, b_.getInt32(kLoomFloat)), as_float, as_int), t);
      check(b_.CreateOr(b_.CreateICmpEQ(code, b_.getInt32(kLoomFloat)), b_.CreateICmpEQ(code, b_.getInt32(kLoomInt))),
            [&] { emit_fail("argument " + std::to_string(i) + " (%" + v->name + ") must be a number"); });
    } else {
      check(b_.CreateICmpEQ(code, b_.getInt32(kLoomInt)),
            [&] { emit_fail("argument " + std::to_string(i) + " (%" + v->name + ") must be an integer"); });
      as_given = b_.CreateLoad(b_.getInt64Ty(), slot);
      as_given = v->dtype.code == DataType::kBool ? b_.CreateICmpNE(as_given, b_.getInt64(0))
                                                  : b_.CreateSExtOrTrunc(as_given, t);
    }
    llvm::BasicBlock* given_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(derived);
    Value* as_derived = nullptr;
    if (from_shape && !is_float(v->dtype) && v->dtype.code != DataType::kBool) {
      as_derived = b_.CreateSExtOrTrunc(from_shape, t);
      b_.CreateBr(join);
    } else {
      emit_fail("%" + v->name + " is not a dimension of any buffer, so it must be passed");
    }
    llvm::BasicBlock* derived_end = b_.GetInsertBlock();
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(t, 2, v->name);
    phi->addIncoming(as_given, given_end);
    if (as_derived) phi->addIncoming(as_derived, derived_end);
    values_[v] = phi;
  }
  // Every dimension must agree with the buffer's shape.
  for (size_t k = 0; k < buffers.size(); ++k) {
    const tir::BufferNode* buffer = buffers[k].get();
    Value* shape = field(tensors[k], kTensorShape, p);
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      Value* got = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), shape, d));
      Value* want = b_.CreateSExtOrTrunc(expr(buffer->shape[d].cast<tir::PrimExpr>()), b_.getInt64Ty());
      check(b_.CreateICmpEQ(got, want), [&] {
        emit_fail("buffer '" + buffer->name + "' has dimension " + std::to_string(d) + " = %lld, but the buffer says " +
                      ir::to_text(buffer->shape[d]),
                  got);
      });
    }
  }
  // Run the body; it stores a result (ret) itself.
  std::vector<Value*> call_args;
  for (const tir::Buffer& buffer : buffers) call_args.push_back(values_.at(buffer->data.get()));
  for (const tir::VarNode* v : tir::entry_scalars(func)) call_args.push_back(values_.at(v));
  b_.CreateStore(b_.getInt32(kLoomNull), ret_code);
  call_args.push_back(ret);
  call_args.push_back(ret_code);
  b_.CreateRet(b_.CreateCall(body, call_args));
}

// ---- statements -------------------------------------------------------------------

void FunctionCodegen::stmt_here(const tir::Stmt& s) {
  if (b_.GetInsertBlock()->getTerminator()) return;  // after a ret
  if (const auto* op = s.as<tir::SeqStmtNode>()) {
    for (const Any& child : op->seq) stmt(child.cast<tir::Stmt>());
  } else if (const auto* op = s.as<tir::ForNode>()) {
    loop(op);
  } else if (const auto* op = s.as<tir::BufferStoreNode>()) {
    store(op);
  } else if (const auto* op = s.as<tir::AllocateNode>()) {
    allocate(op);
  } else if (const auto* op = s.as<tir::LetStmtNode>()) {
    values_[op->var.get()] = expr(op->value);
    stmt(op->body);
  } else if (const auto* op = s.as<tir::IfThenElseNode>()) {
    Value* condition = expr(op->condition);
    if (condition->getType()->isVectorTy()) fail("an if with a vector condition: " + ir::to_text(op->condition));
    llvm::BasicBlock* then_block = llvm::BasicBlock::Create(context_, "then", fn_);
    llvm::BasicBlock* else_block = op->else_case.defined() ? llvm::BasicBlock::Create(context_, "else", fn_) : nullptr;
    llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "endif", fn_);
    b_.CreateCondBr(condition, then_block, else_block ? else_block : done);
    b_.SetInsertPoint(then_block);
    stmt(op->then_case);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
    if (else_block) {
      b_.SetInsertPoint(else_block);
      stmt(op->else_case);
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
  } else if (const auto* op = s.as<tir::EvaluateNode>()) {
    const auto* c = op->value.as<tir::CallNode>();
    if (c && c->op == "tir.launch") return launch(c);
    if (c && c->op == "ret") {
      if (!ret_) fail("ret inside a parallel loop");
      if (c->args.size() != 1) fail("ret takes one value");
      auto value = c->args[0].cast<tir::PrimExpr>();
      Value* v = expr(value);
      DataType t = value.dtype();
      if (t.lanes != 1) fail("ret of a vector");
      if (is_float(t)) {
        b_.CreateStore(b_.CreateFPCast(v, b_.getDoubleTy()), ret_);
        b_.CreateStore(b_.getInt32(kLoomFloat), ret_code_);
      } else {
        b_.CreateStore(
            is_unsigned(t) ? b_.CreateZExtOrTrunc(v, b_.getInt64Ty()) : b_.CreateSExtOrTrunc(v, b_.getInt64Ty()), ret_);
        b_.CreateStore(b_.getInt32(kLoomInt), ret_code_);
      }
      b_.CreateRet(b_.getInt32(0));
      return;
    }
    expr(op->value);
  } else if (const auto* op = s.as<tir::AttrStmtNode>()) {
    stmt(op->body);
  } else {
    fail("cannot compile the statement " + std::string(s->type_key()));
  }
}

namespace {
// How many statements `s` would hold with every loop in it unrolled
// (capped; a loop of unknown extent counts as the cap).
constexpr int64_t kSizeCap = int64_t{1} << 40;
int64_t unrolled_size(const tir::Stmt& s) {
  if (const auto* op = s.as<tir::ForNode>()) {
    const auto* extent = op->extent.as<tir::IntImmNode>();
    if (!extent) return kSizeCap;
    return std::min(kSizeCap, std::max<int64_t>(extent->value, 0) * unrolled_size(op->body));
  }
  if (const auto* op = s.as<tir::SeqStmtNode>()) {
    int64_t n = 0;
    for (const Any& x : op->seq) n = std::min(kSizeCap, n + unrolled_size(x.cast<tir::Stmt>()));
    return n;
  }
  if (const auto* op = s.as<tir::IfThenElseNode>())
    return std::min(kSizeCap,
                    unrolled_size(op->then_case) + (op->else_case.defined() ? unrolled_size(op->else_case) : 0));
  if (const auto* op = s.as<tir::AllocateNode>()) return unrolled_size(op->body);
  if (const auto* op = s.as<tir::LetStmtNode>()) return unrolled_size(op->body);
  if (const auto* op = s.as<tir::AttrStmtNode>()) return unrolled_size(op->body);
  return 1;
}

// Whether LLVM may unroll the serial loop `op` on its own (Loom's
// schedule unrolls what it marks; docs/target-llvm.md, "Loops"): an
// innermost loop, or a reduction loop (its variable indexes no store: a
// window's taps) of at most kReductionUnroll statements unrolled. A loop
// over outputs around other loops (a copy's rows, an elementwise nest)
// stays a loop: LLVM fully unrolled such nests of DenseNet's concatenations
// into straight-line blocks of thousands of instructions, each nest merged
// with the next, and its schedulers, quadratic in a block's length, took
// most of the model's 180 s build, for no speed.
constexpr int64_t kReductionUnroll = 512;
//
// Nor a loop whose unrolled body would read more than kHoistedLoads
// distinct values that stay the same over the loop around it (its loads
// whose indices use none of `varying`: that loop's variable and those of
// the unrolled or vectorized loops between): LLVM hoists them all out of
// that loop and spills them.  A 1x1 convolution over channel blocks (a
// reduction over 3 blocks of 8 channels around a tile of 3 output
// blocks) had its 72 weight vectors hoisted out of the pixel loop and
// took 2.2-3x its time (EfficientNet-B0's expansions with swish); a
// pool's window reads along the pixels and unrolls as before.
constexpr int64_t kHoistedLoads = 8;
int64_t invariant_loads(const tir::ForNode* op, const std::set<const tir::VarNode*>& varying) {
  // The loads counted so far, by expression (same_expression's hash).
  std::unordered_map<uint64_t, std::vector<tir::PrimExpr>> seen;
  std::vector<const tir::ForNode*> inside;
  int64_t n = 0;
  std::function<void(const tir::ForNode*)> walk = [&](const tir::ForNode* loop) {
    inside.push_back(loop);
    tir::pre_order(
        loop->body,
        [&](const tir::Stmt& st) {
          const auto* f = st.as<tir::ForNode>();
          if (f) walk(f);
          return !f;
        },
        [&](const tir::PrimExpr& e) {
          const auto* l = e.as<tir::BufferLoadNode>();
          if (!l) return true;
          for (const tir::VarNode* v : varying)
            if (tir::uses_var(l->indices, v)) return true;
          std::vector<tir::PrimExpr>& same_hash = seen[expression_hash(Any(e))];
          for (const tir::PrimExpr& other : same_hash)
            if (same_expression(Any(other), Any(e))) return true;
          same_hash.push_back(e);
          // One value per iteration of each loop inside whose variable it
          // uses (one vector for a vectorized loop's lanes).
          int64_t values = 1;
          for (const tir::ForNode* f : inside) {
            auto extent = tir::const_int(f->extent);
            if (f->for_kind() != tir::ForKind::kVectorized && tir::uses_var(l->indices, f->loop_var.get()))
              values = std::min(kSizeCap, values * extent.value_or(kSizeCap));
          }
          n = std::min(kSizeCap, n + values);
          return true;
        });
    inside.pop_back();
  };
  walk(op);
  return n;
}
bool llvm_may_unroll(const tir::ForNode* op, const std::vector<const tir::ForNode*>& enclosing) {
  if (!tir::has_loop(op->body)) return true;
  bool indexes_store = false;
  tir::pre_order(op->body, [&](const tir::Stmt& s) {
    if (const auto* store = s.as<tir::BufferStoreNode>())
      indexes_store = indexes_store || tir::uses_var(store->indices, op->loop_var.get());
    return !indexes_store;
  });
  if (indexes_store) return false;
  std::set<const tir::VarNode*> varying;
  for (size_t k = enclosing.size(); k-- > 0;) {
    varying.insert(enclosing[k]->loop_var.get());
    if (enclosing[k]->for_kind() == tir::ForKind::kSerial || enclosing[k]->for_kind() == tir::ForKind::kParallel) break;
  }
  if (!varying.empty() && invariant_loads(op, varying) > kHoistedLoads) return false;
  const auto* extent = op->extent.as<tir::IntImmNode>();
  return extent && extent->value <= kReductionUnroll && extent->value * unrolled_size(op->body) <= kReductionUnroll;
}
}  // namespace

void FunctionCodegen::serial_loop(Value* begin, Value* end, const tir::ForNode* op,
                                  const std::function<void(Value*)>& body) {
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(context_, "for", fn_);
  llvm::BasicBlock* inside = llvm::BasicBlock::Create(context_, "for.body", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "for.end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(begin->getType(), 2, op->loop_var->name);
  i->addIncoming(begin, before);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), inside, done);
  b_.SetInsertPoint(inside);
  enclosing_.push_back(op);
  body(i);
  enclosing_.pop_back();
  if (!b_.GetInsertBlock()->getTerminator()) {
    Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "", true, true);
    llvm::BranchInst* back = b_.CreateBr(header);
    i->addIncoming(next, b_.GetInsertBlock());
    // Loop hints: unrolled -> unroll fully; vectorized (left by
    // VectorizeLoop) -> ask LLVM's vectorizer.
    std::vector<llvm::Metadata*> hints;
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(context_, {});
    hints.push_back(self.get());
    if (op->for_kind() == tir::ForKind::kUnrolled) {
      hints.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.full")}));
    } else if (op->for_kind() == tir::ForKind::kVectorized) {
      hints.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.vectorize.enable"),
                                                   llvm::ConstantAsMetadata::get(b_.getTrue())}));
    } else if (!llvm_may_unroll(op, enclosing_)) {
      hints.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.disable")}));
    }
    if (hints.size() > 1) {
      llvm::MDNode* id = llvm::MDNode::getDistinct(context_, hints);
      id->replaceOperandWith(0, id);
      back->setMetadata(llvm::LLVMContext::MD_loop, id);
    }
  }
  b_.SetInsertPoint(done);
}

void FunctionCodegen::loop(const tir::ForNode* op) {
  switch (op->for_kind()) {
    case tir::ForKind::kParallel:
      parallel_loop(op);
      return;
    case tir::ForKind::kThreadBinding:
      fail("the loop over %" + op->loop_var->name + " is bound to GPU thread '" + op->thread +
           "'; the llvm target runs on the CPU");
    default:
      break;
  }
  Value* begin = expr(op->min);
  Value* end = b_.CreateAdd(begin, expr(op->extent));
  serial_loop(begin, end, op, [&](Value* i) {
    values_[op->loop_var.get()] = i;
    stmt(op->body);
  });
}

// The loop body becomes `int32 closure(i64 begin, i64 end, ptr captured)`
// run by the runtime's parallel_for; the values it uses are passed in a
// struct on the caller's stack.
void FunctionCodegen::parallel_loop(const tir::ForNode* op) {
  std::vector<const tir::VarNode*> captured =
      tir::used_vars(Any(op->body), [&](const tir::VarNode* v) { return values_.count(v) > 0; });
  Value* begin = b_.CreateSExtOrTrunc(expr(op->min), b_.getInt64Ty());
  Value* extent = b_.CreateSExtOrTrunc(expr(op->extent), b_.getInt64Ty());
  std::vector<llvm::Type*> fields;
  for (const tir::VarNode* v : captured) fields.push_back(values_.at(v)->getType());
  llvm::StructType* closure_type = llvm::StructType::get(context_, fields);
  llvm::AllocaInst* closure = entry_alloca(closure_type, 8);
  for (size_t k = 0; k < captured.size(); ++k)
    b_.CreateStore(values_.at(captured[k]), b_.CreateStructGEP(closure_type, closure, k));

  // The task: the loop over a chunk, with the captured values as
  // parameters so that buffer pointers keep their `noalias` (distinct
  // buffers never overlap; views of one buffer share one pointer).
  llvm::Type* i64 = b_.getInt64Ty();
  std::vector<llvm::Type*> task_params{i64, i64};
  task_params.insert(task_params.end(), fields.begin(), fields.end());
  llvm::Function* task = llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), task_params, false),
                                                llvm::Function::InternalLinkage,
                                                fn_->getName() + ".task" + std::to_string(outlined_), module_);
  for (size_t k = 0; k < captured.size(); ++k)
    if (fields[k]->isPointerTy()) task->addParamAttr(2 + k, llvm::Attribute::NoAlias);
  // The closure parallel_for calls: unpacks the captured values, runs the task.
  llvm::FunctionType* closure_fn_type = llvm::FunctionType::get(b_.getInt32Ty(), {i64, i64, b_.getPtrTy()}, false);
  llvm::Function* outlined =
      llvm::Function::Create(closure_fn_type, llvm::Function::InternalLinkage,
                             fn_->getName() + ".parallel" + std::to_string(outlined_++), module_);
  // Save the state of the enclosing function, emit both, restore.
  llvm::Function* saved_fn = fn_;
  llvm::BasicBlock* saved_entry = entry_block_;
  llvm::IRBuilderBase::InsertPoint saved_point = b_.saveIP();
  auto saved_values = values_;
  Value* saved_ret = ret_;
  ret_ = nullptr;
  {
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(context_, "entry", outlined);
    b_.SetInsertPoint(entry);
    std::vector<Value*> args{outlined->getArg(0), outlined->getArg(1)};
    for (size_t k = 0; k < captured.size(); ++k)
      args.push_back(b_.CreateLoad(fields[k], b_.CreateStructGEP(closure_type, outlined->getArg(2), k)));
    b_.CreateRet(b_.CreateCall(task, args));
  }
  fn_ = task;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", task);
  b_.SetInsertPoint(entry_block_);
  for (size_t k = 0; k < captured.size(); ++k) values_[captured[k]] = task->getArg(2 + k);
  DataType loop_type = op->loop_var->dtype;
  serial_loop(task->getArg(0), task->getArg(1), op, [&](Value* i) {
    values_[op->loop_var.get()] = b_.CreateSExtOrTrunc(i, type(loop_type));  // chunks are of [min, min + extent)
    stmt(op->body);
  });
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateRet(b_.getInt32(0));
  fn_ = saved_fn;
  entry_block_ = saved_entry;
  b_.restoreIP(saved_point);
  values_ = std::move(saved_values);
  ret_ = saved_ret;

  // parallel_for(begin, begin + extent, closure_fn, closure)
  llvm::FunctionType* parallel_for =
      llvm::FunctionType::get(b_.getInt32Ty(), {i64, i64, b_.getPtrTy(), b_.getPtrTy()}, false);
  Value* status =
      b_.CreateCall(parallel_for, api_function(kParallelFor), {begin, b_.CreateAdd(begin, extent), outlined, closure});
  check(b_.CreateICmpEQ(status, b_.getInt32(0)), [&] { b_.CreateRet(status); });
}

// tir.launch("kernel", grid x/y/z, block x/y/z, args...): the kernel,
// found by name among the module's imports (get_function), called through
// call_function with the six sizes and the arguments as LoomValues
// (buffers as their device handles).
void FunctionCodegen::launch(const tir::CallNode* op) {
  const auto* kernel = op->args.size() >= 7 ? op->args[0].as_object_ref().as<tir::StringImmNode>() : nullptr;
  if (!kernel) fail("tir.launch takes the kernel's name, six launch sizes and the kernel's arguments");
  uint64_t n = op->args.size() - 1;
  llvm::AllocaInst* values = entry_alloca(llvm::ArrayType::get(b_.getInt64Ty(), n), 8);  // LoomValue: 8 bytes
  llvm::AllocaInst* codes = entry_alloca(llvm::ArrayType::get(b_.getInt32Ty(), n), 4);
  llvm::AllocaInst* result = entry_alloca(b_.getInt64Ty(), 8);
  llvm::AllocaInst* result_code = entry_alloca(b_.getInt32Ty(), 4);
  llvm::AllocaInst* function = entry_alloca(b_.getPtrTy(), 8);
  static_assert(sizeof(LoomValue) == 8, "a LoomValue is one 64-bit word");
  for (uint64_t k = 0; k < n; ++k) {
    auto arg = op->args[k + 1].cast<tir::PrimExpr>();
    DataType t = arg.dtype();
    Value* v = expr(arg);
    Value* slot = b_.CreateConstGEP1_64(b_.getInt64Ty(), values, k);
    int32_t code = kLoomInt;
    if (t.code == DataType::kHandle) {
      code = kLoomHandle;
      b_.CreateStore(v, slot);
    } else if (is_float(t)) {
      code = kLoomFloat;
      b_.CreateStore(b_.CreateFPCast(v, b_.getDoubleTy()), slot);
    } else {
      b_.CreateStore(
          is_unsigned(t) ? b_.CreateZExtOrTrunc(v, b_.getInt64Ty()) : b_.CreateSExtOrTrunc(v, b_.getInt64Ty()), slot);
    }
    b_.CreateStore(b_.getInt32(code), b_.CreateConstGEP1_64(b_.getInt32Ty(), codes, k));
  }
  llvm::GlobalVariable* context = module_.getGlobalVariable("__loom_module_ctx");
  if (!context) {
    context = new llvm::GlobalVariable(module_, b_.getPtrTy(), false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                       "__loom_module_ctx");
  }
  llvm::FunctionType* get_type =
      llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy()}, false);
  Value* status = b_.CreateCall(get_type, api_function(kGetFunction),
                                {b_.CreateLoad(b_.getPtrTy(), context), string_constant(kernel->value), function});
  check(b_.CreateICmpEQ(status, b_.getInt32(0)), [&] { b_.CreateRet(status); });
  llvm::FunctionType* call_type = llvm::FunctionType::get(
      b_.getInt32Ty(), {b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty(), b_.getPtrTy(), b_.getPtrTy()},
      false);
  status = b_.CreateCall(call_type, api_function(kCallFunction),
                         {b_.CreateLoad(b_.getPtrTy(), function), values, codes, b_.getInt32(static_cast<int32_t>(n)),
                          result, result_code});
  check(b_.CreateICmpEQ(status, b_.getInt32(0)), [&] { b_.CreateRet(status); });
}

void FunctionCodegen::allocate(const tir::AllocateNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  if (buffer->scope != "global" && buffer->scope != "local") {
    fail("buffer '" + buffer->name + "' is in scope '" + buffer->scope + "', which the CPU does not have");
  }
  llvm::Type* element = memory_type(scalar_of(buffer->dtype));
  uint64_t element_bytes = module_.getDataLayout().getTypeAllocSize(element) * std::max<int>(1, buffer->dtype.lanes);
  Value* count = b_.getInt64(1);
  bool constant = true;
  int64_t elements = 1;
  for (const Any& d : buffer->shape) {
    auto dim = d.cast<tir::PrimExpr>();
    if (const auto* imm = dim.as<tir::IntImmNode>()) {
      elements *= imm->value;
    } else {
      constant = false;
    }
    count = b_.CreateMul(count, b_.CreateSExtOrTrunc(expr(dim), b_.getInt64Ty()));
  }
  Value* bytes = b_.CreateMul(count, b_.getInt64(element_bytes));
  // A host function that launches kernels allocates its intermediate
  // buffers on their device.
  if (device_type_ == kDLCPU && constant && elements * static_cast<int64_t>(element_bytes) <= kMaxStackBytes) {
    llvm::AllocaInst* memory = entry_alloca(llvm::ArrayType::get(b_.getInt8Ty(), elements * element_bytes), 64);
    values_[buffer->data.get()] = memory;
    stmt(op->body);
    return;
  }
  llvm::FunctionType* alloc_type =
      llvm::FunctionType::get(b_.getPtrTy(), {b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty()}, false);
  llvm::CallInst* memory =
      b_.CreateCall(alloc_type, api_function(kAllocWorkspace), {b_.getInt32(device_type_), b_.getInt32(0), bytes});
  memory->addRetAttr(llvm::Attribute::NoAlias);  // fresh memory, as malloc's
  memory->addRetAttr(llvm::Attribute::getWithAlignment(context_, llvm::Align(64)));
  check(b_.CreateIsNotNull(memory), [&] { b_.CreateRet(b_.getInt32(-1)); });
  values_[buffer->data.get()] = memory;
  stmt(op->body);
  if (b_.GetInsertBlock()->getTerminator()) return;  // a ret inside: the runtime frees workspaces it owns
  llvm::FunctionType* free_type =
      llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), b_.getInt32Ty(), b_.getPtrTy()}, false);
  b_.CreateCall(free_type, api_function(kFreeWorkspace), {b_.getInt32(device_type_), b_.getInt32(0), memory});
}

Value* FunctionCodegen::element_pointer(const tir::BufferNode* buffer, const Array& indices, int lanes,
                                        int64_t* stride) {
  // Flat index over the shape (or the strides), plus elem_offset.
  tir::PrimExpr flat;
  if (indices.size() == 1 && buffer->strides.size() == 0) {
    flat = indices[0].cast<tir::PrimExpr>();
  } else {
    if (indices.size() != buffer->shape.size()) {
      fail("buffer '" + buffer->name + "' has " + std::to_string(buffer->shape.size()) + " dimensions, indexed with " +
           std::to_string(indices.size()));
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      auto index = indices[d].cast<tir::PrimExpr>();
      DataType t = index.dtype();
      auto extent = buffer->strides.size() == 0 ? buffer->shape[d].cast<tir::PrimExpr>()
                                                : buffer->strides[d].cast<tir::PrimExpr>();
      if (!buffer->strides.size() == 0) {
        tir::PrimExpr term = tir::Mul(index, tir::Cast(t, extent));
        flat = flat.defined() ? tir::PrimExpr(tir::Add(flat, term)) : term;
      } else {
        if (flat.defined()) {
          // Vector indices (not flattened yet) scale by a broadcast extent.
          tir::PrimExpr scale = tir::Cast(scalar_of(flat.dtype()), extent);
          if (flat.dtype().lanes > 1) scale = tir::Broadcast(scale, flat.dtype().lanes);
          flat = tir::Add(tir::Mul(flat, scale), index);
        } else {
          flat = index;
        }
      }
    }
  }
  Value* offset = nullptr;
  *stride = 0;
  llvm::Type* element = memory_type(scalar_of(buffer->dtype));
  Value* base = var(buffer->data.get());
  if (buffer->elem_offset.defined()) base = b_.CreateGEP(element, base, expr(buffer->elem_offset));
  if (lanes > 1) {
    if (const auto* ramp = flat.as<tir::RampNode>(); ramp && ramp->lanes == lanes) {
      if (const auto* step = ramp->stride.as<tir::IntImmNode>(); step && step->value > 0) {
        *stride = step->value;
        return b_.CreateInBoundsGEP(element, base, expr(ramp->base));
      }
    }
    offset = expr(flat);
    if (!offset->getType()->isVectorTy()) offset = splat(offset, lanes);
    return b_.CreateInBoundsGEP(element, base, offset);  // a vector of pointers
  }
  return b_.CreateInBoundsGEP(element, base, expr(flat));
}

Value* FunctionCodegen::load(const tir::BufferLoadNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  int lanes = op->dtype.lanes;
  int64_t stride = 0;
  llvm::Type* element = memory_type(scalar_of(buffer->dtype));
  llvm::Align align(module_.getDataLayout().getABITypeAlign(element));
  Value* pointer = element_pointer(buffer, op->indices, lanes, &stride);
  Value* v;
  if (lanes == 1) {
    v = b_.CreateAlignedLoad(element, pointer, align);
  } else if (stride == 1) {
    v = b_.CreateAlignedLoad(llvm::FixedVectorType::get(element, lanes), pointer, align);
  } else if (stride > 1 && stride <= kMaxShuffledStride) {
    // A small constant stride (a pool's window): one contiguous load of the
    // elements from the first to the last lane's, then the lanes picked
    // out; it reads nothing outside that range.
    int64_t span = (lanes - 1) * stride + 1;
    Value* all = b_.CreateAlignedLoad(llvm::FixedVectorType::get(element, static_cast<unsigned>(span)), pointer, align);
    std::vector<int> picks;
    for (int k = 0; k < lanes; ++k) picks.push_back(static_cast<int>(k * stride));
    v = b_.CreateShuffleVector(all, picks);
  } else {
    if (stride > 0) pointer = b_.CreateInBoundsGEP(element, pointer, step_offsets(stride, lanes));
    v = b_.CreateMaskedGather(llvm::FixedVectorType::get(element, lanes), pointer, align);
  }
  if (buffer->dtype.code == DataType::kBool) v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  return v;
}

// Emits `e` with a * b + c allowed to become one fused multiply-add.
Value* FunctionCodegen::contracted(const std::function<Value*()>& emit) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  llvm::FastMathFlags flags;
  flags.setAllowContract(true);
  b_.setFastMathFlags(flags);
  return emit();
}

void FunctionCodegen::store(const tir::BufferStoreNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  // A reduction's update B[i] = B[i] + a * b: its products fuse into the sum.
  auto update = tir::match_reduction_update(op);
  Value* v =
      update && update->op == tir::ReduceOp::kAdd ? contracted([&] { return expr(op->value); }) : expr(op->value);
  int lanes = op->value.dtype().lanes;
  if (buffer->dtype.code == DataType::kBool) v = b_.CreateZExt(v, memory_type(op->value.dtype()));
  int64_t stride = 0;
  llvm::Type* element = memory_type(scalar_of(buffer->dtype));
  llvm::Align align(module_.getDataLayout().getABITypeAlign(element));
  Value* pointer = element_pointer(buffer, op->indices, lanes, &stride);
  if (lanes == 1 || stride == 1) {
    b_.CreateAlignedStore(v, pointer, align);
  } else {
    if (stride > 0) pointer = b_.CreateInBoundsGEP(element, pointer, step_offsets(stride, lanes));
    b_.CreateMaskedScatter(v, pointer, align);
  }
}

// ---- expressions ------------------------------------------------------------------

Value* FunctionCodegen::expr_here(const tir::PrimExpr& e) {
  if (const auto* op = e.as<tir::IntImmNode>()) {
    if (op->dtype.code == DataType::kBool) return b_.getInt1(op->value != 0);
    return llvm::ConstantInt::get(scalar_type(op->dtype), static_cast<uint64_t>(op->value), true);
  }
  if (const auto* op = e.as<tir::FloatImmNode>()) {
    if (op->dtype.code == DataType::kBFloat) return b_.getInt16(bfloat16_bits(op->value));
    return llvm::ConstantFP::get(scalar_type(op->dtype), op->value);
  }
  if (const auto* op = e.as<tir::StringImmNode>()) return string_constant(op->value);
  if (const auto* op = e.as<tir::VarNode>()) return var(op);
  if (const auto* op = e.as<tir::BinaryOpNode>()) return binary(op);
  if (const auto* op = e.as<tir::NotNode>()) return b_.CreateNot(expr(op->a));
  if (const auto* op = e.as<tir::SelectNode>()) {
    return b_.CreateSelect(expr(op->condition), expr(op->true_value), expr(op->false_value));
  }
  if (const auto* op = e.as<tir::CastNode>()) return cast(op->dtype, op->value.dtype(), expr(op->value));
  if (const auto* op = e.as<tir::BufferLoadNode>()) return load(op);
  if (const auto* op = e.as<tir::RampNode>()) {
    Value* base = expr(op->base);
    Value* stride = expr(op->stride);
    std::vector<llvm::Constant*> steps;
    for (int64_t k = 0; k < op->lanes; ++k) steps.push_back(llvm::ConstantInt::get(base->getType(), k));
    return b_.CreateAdd(splat(base, static_cast<int>(op->lanes)),
                        b_.CreateMul(splat(stride, static_cast<int>(op->lanes)), llvm::ConstantVector::get(steps)));
  }
  if (const auto* op = e.as<tir::BroadcastNode>()) return splat(expr(op->value), static_cast<int>(op->lanes));
  if (const auto* op = e.as<tir::LetNode>()) {
    values_[op->var.get()] = expr(op->value);
    return expr(op->body);
  }
  if (const auto* op = e.as<tir::CallNode>()) return call(op);
  fail("cannot compile the expression " + ir::to_text(Any(e)));
}

Value* FunctionCodegen::binary(const tir::BinaryOpNode* op) {
  DataType t = op->a.dtype();
  // acc + dot2_bf16(..), acc + dot4_u8i8(..): vdpbf16ps and vpdpbusd add
  // the group's products to acc themselves.
  if (op->type_index() == tir::AddNode::runtime_type_index()) {
    for (auto [dot, acc] : {std::pair{op->b, op->a}, std::pair{op->a, op->b}}) {
      const auto* c = dot.as<tir::CallNode>();
      bool bf16 = c && c->op == "dot2_bf16" && c->args.size() == 4;
      if (!bf16 && !(c && c->op == "dot4_u8i8" && c->args.size() == 8)) continue;
      Value* sum = expr(acc);
      std::vector<Value*> args;
      for (const Any& a : c->args) args.push_back(expr(a.cast<tir::PrimExpr>()));
      return bf16 ? dot2_bf16(c, args, sum) : dot4_u8i8(c, args, sum);
    }
  }
  if (t.code != DataType::kBFloat) return binary(op, expr(op->a), expr(op->b), t);
  // bfloat16 computes in float32 and rounds back to nearest even: exact
  // for +, -, *, / (float32 has more than twice bfloat16's bits plus two,
  // so the double rounding gives the correctly rounded result).  LLVM's
  // own bfloat arithmetic calls compiler-rt, which is not linked.
  DataType f32(DataType::kFloat, 32, t.lanes);
  Value* r = binary(op, cast(f32, t, expr(op->a)), cast(f32, t, expr(op->b)), f32);
  return op->dtype.code == DataType::kBool ? r : cast(DataType(DataType::kBFloat, 16, t.lanes), f32, r);
}

Value* FunctionCodegen::binary(const tir::BinaryOpNode* op, Value* a, Value* b, DataType t) {
  bool fl = is_float(t), un = is_unsigned(t);
  auto is = [op](uint32_t index) { return op->type_index() == index; };
  if (is(tir::AddNode::runtime_type_index())) return fl ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
  if (is(tir::SubNode::runtime_type_index())) return fl ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
  if (is(tir::MulNode::runtime_type_index())) return fl ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
  if (is(tir::MinNode::runtime_type_index()) || is(tir::MaxNode::runtime_type_index())) {
    bool min = is(tir::MinNode::runtime_type_index());
    if (!fl)
      return b_.CreateSelect(min ? (un ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b))
                                 : (un ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b)),
                             a, b);
    // NumPy's minimum/maximum propagate NaN: a NaN a is kept, a NaN b
    // loses every ordered comparison.
    if (Value* one = x86_min_max(min, a, b)) return one;
    Value* pick_a = min ? b_.CreateFCmpOLT(a, b) : b_.CreateFCmpOGT(a, b);
    return b_.CreateSelect(b_.CreateOr(pick_a, b_.CreateFCmpUNO(a, a)), a, b);
  }
  // Integer division by zero gives 0 (as NumPy's), never a trap; so does
  // the signed MIN / -1 overflow, which wraps to MIN (as NumPy's): the
  // hardware divides by 1 instead and the quotient is negated.
  auto is_constant = [](Value* v, int64_t value) {
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(v);
    return c && c->getSExtValue() == value;
  };
  bool may_be_minus_one = !un && (!llvm::isa<llvm::Constant>(b) || is_constant(b, -1));
  auto safe = [&](Value* divisor) {
    if (llvm::isa<llvm::Constant>(divisor) && !is_constant(divisor, 0) && !is_constant(divisor, -1)) return divisor;
    Value* one = llvm::ConstantInt::get(divisor->getType(), 1);
    Value* bad = b_.CreateICmpEQ(divisor, llvm::Constant::getNullValue(divisor->getType()));
    if (may_be_minus_one)
      bad = b_.CreateOr(bad, b_.CreateICmpEQ(divisor, llvm::Constant::getAllOnesValue(divisor->getType())));
    return b_.CreateSelect(bad, one, divisor);
  };
  auto zero_if_div0 = [&](Value* result) {
    if (llvm::isa<llvm::Constant>(b) && !is_constant(b, 0)) return result;
    return b_.CreateSelect(b_.CreateICmpEQ(b, llvm::Constant::getNullValue(b->getType())),
                           llvm::Constant::getNullValue(result->getType()), result);
  };
  auto negated_if_minus_one = [&](Value* quotient) {
    if (!may_be_minus_one) return quotient;
    return b_.CreateSelect(b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(b->getType())), b_.CreateNeg(a),
                           quotient);
  };
  if (is(tir::DivNode::runtime_type_index())) {
    if (fl) return b_.CreateFDiv(a, b);
    return zero_if_div0(un ? b_.CreateUDiv(a, safe(b)) : negated_if_minus_one(b_.CreateSDiv(a, safe(b))));
  }
  if (is(tir::FloorDivNode::runtime_type_index()) || is(tir::FloorModNode::runtime_type_index())) {
    bool div = is(tir::FloorDivNode::runtime_type_index());
    if (fl) {
      llvm::Function* floor = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::floor, {a->getType()});
      Value* q = b_.CreateCall(floor, {b_.CreateFDiv(a, b)});
      return div ? q : b_.CreateFSub(a, b_.CreateFMul(q, b));
    }
    if (un) return zero_if_div0(div ? b_.CreateUDiv(a, safe(b)) : b_.CreateURem(a, safe(b)));
    Value* d = b_.CreateSDiv(a, safe(b));
    Value* m = b_.CreateSRem(a, safe(b));
    Value* zero = llvm::Constant::getNullValue(a->getType());
    // Round towards minus infinity: adjust when the remainder is non-zero
    // and its sign differs from the divisor's.
    Value* adjust =
        b_.CreateAnd(b_.CreateICmpNE(m, zero), b_.CreateICmpNE(b_.CreateICmpSLT(m, zero), b_.CreateICmpSLT(b, zero)));
    return zero_if_div0(div ? negated_if_minus_one(b_.CreateSub(d, b_.CreateZExt(adjust, a->getType())))
                            : b_.CreateSelect(adjust, b_.CreateAdd(m, b), m));
  }
  using P = llvm::CmpInst::Predicate;
  auto compare = [&](P fp, P sp, P up) { return fl ? b_.CreateFCmp(fp, a, b) : b_.CreateICmp(un ? up : sp, a, b); };
  if (is(tir::EQNode::runtime_type_index())) return compare(P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ);
  if (is(tir::NENode::runtime_type_index())) return compare(P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE);
  if (is(tir::LTNode::runtime_type_index())) return compare(P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT);
  if (is(tir::LENode::runtime_type_index())) return compare(P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE);
  if (is(tir::GTNode::runtime_type_index())) return compare(P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT);
  if (is(tir::GENode::runtime_type_index())) return compare(P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE);
  auto truth = [&](Value* v) {
    return v->getType()->getScalarType()->isIntegerTy(1)
               ? v
               : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  };
  if (is(tir::AndNode::runtime_type_index())) return b_.CreateAnd(truth(a), truth(b));
  if (is(tir::OrNode::runtime_type_index())) return b_.CreateOr(truth(a), truth(b));
  fail("cannot compile the operator " + std::string(op->type_key()));
}

// min or max of float32 vectors against a constant that is not NaN (the
// bounds of relu, clip and hard-swish) as one x86 maxps/minps: maxps(c, x)
// is c > x ? c : x, so a NaN x comes out as itself, as the general
// lowering's four instructions (two compares, an or, a blend) give it;
// only max(-0, +0) differs (-0; +0 there). Null where it does not apply.
Value* FunctionCodegen::x86_min_max(bool min, Value* a, Value* b) {
  auto* type = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  if (!type || !type->getElementType()->isFloatTy()) return nullptr;
  auto not_nan = [](Value* v) {
    auto* c = llvm::dyn_cast<llvm::Constant>(v);
    const llvm::ConstantFP* splat = c ? llvm::dyn_cast_or_null<llvm::ConstantFP>(c->getSplatValue()) : nullptr;
    return splat && !splat->getValueAPF().isNaN();
  };
  if (!not_nan(b)) {
    if (!not_nan(a)) return nullptr;
    std::swap(a, b);
  }
  unsigned lanes = type->getNumElements();
  llvm::Intrinsic::ID id;
  if (lanes == 4 && x86_.sse)
    id = min ? llvm::Intrinsic::x86_sse_min_ps : llvm::Intrinsic::x86_sse_max_ps;
  else if (lanes == 8 && x86_.avx)
    id = min ? llvm::Intrinsic::x86_avx_min_ps_256 : llvm::Intrinsic::x86_avx_max_ps_256;
  else if (lanes == 16 && x86_.avx512)
    id = min ? llvm::Intrinsic::x86_avx512_min_ps_512 : llvm::Intrinsic::x86_avx512_max_ps_512;
  else
    return nullptr;
  std::vector<Value*> args = {b, a};                // the constant first: a NaN a is the result
  if (lanes == 16) args.push_back(b_.getInt32(4));  // the current rounding mode
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, id), args);
}

// dot2_i16(a0, b0, a1, b1): a0 * b0 + a1 * b1 in int32 per lane (the
// core's intrinsic; PairProducts writes it).  On x86 one pmaddwd of the
// pairs interleaved, (a0, a1) against (b0, b1): the sum modulo 2^32, as
// the expansion's int32 arithmetic (only -32768 in all four wraps).
// Elsewhere, and for widths pmaddwd has not, widened products and a sum.
// x0 = b[ramp(base, g, n)], x1 = b[ramp(base + 1, g, n)], .. (g of them)
// as the one load b[ramp(base, 1, g n)]; undefined for any other group.
tir::PrimExpr adjacent_run(const std::vector<tir::PrimExpr>& xs) {
  int64_t g = static_cast<int64_t>(xs.size());
  const auto* l0 = xs[0].as<tir::BufferLoadNode>();
  if (!l0 || l0->indices.size() != 1) return tir::PrimExpr();
  const auto* r0 = l0->indices[0].cast<tir::PrimExpr>().as<tir::RampNode>();
  if (!r0 || tir::const_int(r0->stride) != g) return tir::PrimExpr();
  for (int64_t k = 1; k < g; ++k) {
    const auto* l = xs[static_cast<size_t>(k)].as<tir::BufferLoadNode>();
    if (!l || l->buffer.get() != l0->buffer.get() || l->indices.size() != 1) return tir::PrimExpr();
    const auto* r = l->indices[0].cast<tir::PrimExpr>().as<tir::RampNode>();
    if (!r || r->lanes != r0->lanes || tir::const_int(r->stride) != g ||
        tir::const_int(arith::simplify(tir::Sub(r->base, r0->base))) != k)
      return tir::PrimExpr();
  }
  return tir::BufferLoad(l0->buffer, {tir::Ramp(r0->base, tir::IntImm(r0->stride.dtype(), 1), g * r0->lanes)});
}

Value* FunctionCodegen::dot2_i16(const tir::CallNode* op, std::vector<Value*> args) {
  int lanes = op->dtype.lanes;
  DataType i16(DataType::kInt, 16, lanes), i32(DataType::kInt, 32, lanes);
  std::vector<DataType> types;
  for (size_t k = 0; k < args.size(); ++k) {
    DataType t = op->args[k].cast<tir::PrimExpr>().dtype();
    if (!tir::dot2_i16_operand(t))
      fail("dot2_i16 takes integers of at most 16 bits (not uint16), got " + t.to_string() + " as argument " +
           std::to_string(k + 1));
    if (t.lanes != lanes) args[k] = b_.CreateVectorSplat(lanes, args[k]);
    types.push_back(DataType(static_cast<DataType::Code>(t.code), t.bits, lanes));
  }
  llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
  if (lanes == 4 && x86_.sse2) id = llvm::Intrinsic::x86_sse2_pmadd_wd;
  if (lanes == 8 && x86_.avx2) id = llvm::Intrinsic::x86_avx2_pmadd_wd;
  if (lanes == 16 && x86_.avx512bw) id = llvm::Intrinsic::x86_avx512_pmaddw_d_512;
  if (id == llvm::Intrinsic::not_intrinsic) {
    auto product = [&](size_t a, size_t b) {
      return b_.CreateMul(cast(i32, types[a], args[a]), cast(i32, types[b], args[b]));
    };
    return b_.CreateAdd(product(0, 1), product(2, 3));
  }
  // Of two values of one type the narrow values are interleaved, then
  // widened (one unpack and one extension); else each is widened first.
  auto pairs = [&](size_t first, size_t second) {
    DataType narrow = types[first] == types[second] ? types[first] : i16;
    Value* pair = interleaved(op, {first, second},
                              {cast(narrow, types[first], args[first]), cast(narrow, types[second], args[second])});
    return cast(DataType(DataType::kInt, 16, 2 * lanes),
                DataType(static_cast<DataType::Code>(narrow.code), narrow.bits, 2 * lanes), pair);
  };
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, id), {pairs(0, 2), pairs(1, 3)});
}

Value* FunctionCodegen::interleaved(const tir::CallNode* op, const std::vector<size_t>& positions,
                                    const std::vector<Value*>& xs) {
  // Broadcasts are the group broadcast (a row of a matrix product: g
  // adjacent elements; of 32 bits in all, one 32-bit broadcast); loads of
  // every g-th element of a contiguous run from each of g offsets (a
  // panel PairProducts' layout keeps groups in) are one load of the run.
  int lanes = op->dtype.lanes, g = static_cast<int>(xs.size());
  std::vector<tir::PrimExpr> es;
  for (size_t p : positions) es.push_back(op->args[p].cast<tir::PrimExpr>());
  if (tir::PrimExpr run = adjacent_run(es); run.defined()) return expr(run);  // es[0]'s type, g * lanes
  std::vector<Value*> scalars;
  for (Value* x : xs) scalars.push_back(llvm::getSplatValue(x));
  bool splats = std::all_of(scalars.begin(), scalars.end(), [](Value* v) { return v != nullptr; });
  llvm::Type* element = xs[0]->getType()->getScalarType();
  unsigned bits = element->getPrimitiveSizeInBits();
  if (splats && bits * static_cast<unsigned>(g) == 32) {
    // The scalars as one 32-bit broadcast (element by element it took
    // eight inserts; of adjacent loads LLVM makes one load).
    Value* all = nullptr;
    for (int k = 0; k < g; ++k) {
      Value* part = b_.CreateZExt(b_.CreateBitCast(scalars[k], b_.getIntNTy(bits)), b_.getInt32Ty());
      if (k > 0) part = b_.CreateShl(part, b_.getInt32(bits * static_cast<unsigned>(k)));
      all = all ? b_.CreateOr(all, part) : part;
    }
    return b_.CreateBitCast(b_.CreateVectorSplat(lanes, all), llvm::FixedVectorType::get(element, g * lanes));
  }
  std::vector<int> order;
  if (splats) {
    Value* group = llvm::PoisonValue::get(llvm::FixedVectorType::get(element, g));
    for (int k = 0; k < g; ++k) group = b_.CreateInsertElement(group, scalars[k], uint64_t(k));
    for (int k = 0; k < lanes; ++k)
      for (int m = 0; m < g; ++m) order.push_back(m);
    return b_.CreateShuffleVector(group, order);
  }
  // All of xs concatenated (g vectors of `lanes`, g a power of two), then
  // lane k of each in turn.
  std::vector<Value*> parts(xs);
  while (parts.size() > 1) {
    std::vector<Value*> joined;
    for (size_t k = 0; k + 1 < parts.size(); k += 2) {
      int n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements());
      std::vector<int> both;
      for (int m = 0; m < 2 * n; ++m) both.push_back(m);
      joined.push_back(b_.CreateShuffleVector(parts[k], parts[k + 1], both));
    }
    parts = joined;
  }
  for (int k = 0; k < lanes; ++k)
    for (int m = 0; m < g; ++m) order.push_back(m * lanes + k);
  return b_.CreateShuffleVector(parts[0], order);
}

// acc + dot4_u8i8(a0, b0, .., a3, b3), its arguments emitted (acc null:
// 0).  With AVX-512 VNNI (16 lanes; 4 and 8 with AVX-512VL) or AVX-VNNI
// (4 and 8), one vpdpbusd of the groups interleaved, (a0, .., a3) as
// unsigned bytes against (b0, .., b3) as signed ones, added to acc
// without saturation: exact, as the expansion.  Elsewhere the widened
// products and their sum.
Value* FunctionCodegen::dot4_u8i8(const tir::CallNode* op, std::vector<Value*> args, Value* acc) {
  int lanes = op->dtype.lanes;
  DataType i32(DataType::kInt, 32, lanes);
  for (size_t k = 0; k < args.size(); ++k) {
    DataType t = op->args[k].cast<tir::PrimExpr>().dtype();
    DataType::Code want = k % 2 == 0 ? DataType::kUInt : DataType::kInt;
    if (t.code != want || t.bits != 8)
      fail("dot4_u8i8 takes uint8 and int8 arguments in turn, got " + t.to_string() + " as argument " +
           std::to_string(k + 1));
    if (t.lanes != lanes) args[k] = b_.CreateVectorSplat(lanes, args[k]);
  }
  if (!acc) acc = llvm::Constant::getNullValue(type(i32));
  llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
  bool narrow = x86_.avxvnni || (x86_.avx512vnni && x86_.avx512vl);
  if (lanes == 16 && x86_.avx512vnni) id = llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  if (lanes == 8 && narrow) id = llvm::Intrinsic::x86_avx512_vpdpbusd_256;
  if (lanes == 4 && narrow) id = llvm::Intrinsic::x86_avx512_vpdpbusd_128;
  if (id == llvm::Intrinsic::not_intrinsic) {
    DataType u8(DataType::kUInt, 8, lanes), s8(DataType::kInt, 8, lanes);
    Value* sum = acc;
    for (size_t k = 0; k < 8; k += 2)
      sum = b_.CreateAdd(sum, b_.CreateMul(cast(i32, u8, args[k]), cast(i32, s8, args[k + 1])));
    return sum;
  }
  auto groups = [&](size_t first) {
    std::vector<size_t> at{first, first + 2, first + 4, first + 6};
    return b_.CreateBitCast(interleaved(op, at, {args[at[0]], args[at[1]], args[at[2]], args[at[3]]}), type(i32));
  };
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, id), {acc, groups(0), groups(1)});
}

// acc + dot2_bf16(a0, b0, a1, b1), its arguments emitted (acc null: 0).
// With AVX-512 BF16, one vdpbf16ps of the pairs interleaved, (a0, a1)
// against (b0, b1), adding to acc (4 and 8 lanes need AVX-512VL too);
// else the products widened to float32 and added.  The instruction is
// written as inline assembly on int32 vectors of the pairs' bits: LLVM
// 16's intrinsic takes bfloat vectors, and its cost model recurses
// without end on a shuffle of them (VectorCombine folding the bitcast of
// a broadcast pair crashed the build of a plain matmul).
Value* FunctionCodegen::dot2_bf16(const tir::CallNode* op, std::vector<Value*> args, Value* acc) {
  int lanes = op->dtype.lanes;
  DataType f32(DataType::kFloat, 32, lanes);
  for (size_t k = 0; k < args.size(); ++k) {
    DataType t = op->args[k].cast<tir::PrimExpr>().dtype();
    if (t.code != DataType::kBFloat || t.bits != 16)
      fail("dot2_bf16 takes bfloat16 arguments, got " + t.to_string() + " as argument " + std::to_string(k + 1));
    if (t.lanes != lanes) args[k] = b_.CreateVectorSplat(lanes, args[k]);
  }
  bool native = x86_.avx512bf16 && (lanes == 16 || ((lanes == 4 || lanes == 8) && x86_.avx512vl));
  if (!acc) acc = llvm::Constant::getNullValue(type(f32));
  if (!native) {
    DataType bf16(DataType::kBFloat, 16, lanes);
    auto product = [&](size_t a, size_t b) {
      return b_.CreateFMul(cast(f32, bf16, args[a]), cast(f32, bf16, args[b]));
    };
    return b_.CreateFAdd(acc, b_.CreateFAdd(product(0, 1), product(2, 3)));
  }
  llvm::Type* pair_t = llvm::FixedVectorType::get(b_.getInt32Ty(), lanes);
  auto pairs = [&](size_t first, size_t second) {
    return b_.CreateBitCast(interleaved(op, {first, second}, {args[first], args[second]}), pair_t);
  };
  llvm::FunctionType* sig = llvm::FunctionType::get(type(f32), {pair_t, pair_t, type(f32)}, false);
  // AT&T order: vdpbf16ps src2, src1, dst; dst (tied to acc) += the pairs' products.
  llvm::InlineAsm* dp = llvm::InlineAsm::get(sig, "vdpbf16ps $2, $1, $0", "=v,v,v,0", /*hasSideEffects=*/false);
  llvm::CallInst* call = b_.CreateCall(sig, dp, {pairs(0, 2), pairs(1, 3), acc});
  // It reads registers only, returns and does not throw: without saying
  // so a call to inline assembly may touch memory or unwind, and LLVM kept
  // each accumulator's store inside the reduction loop (a bfloat16 matmul
  // at 0.74x the float32 one).
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  call->addFnAttr(llvm::Attribute::WillReturn);
  return call;
}

Value* FunctionCodegen::cast(DataType to, DataType from, Value* v) {
  llvm::Type* target = type(to);
  // bfloat16 is the top half of a float32: widened by a shift, narrowed by
  // rounding the low half to nearest even (NaN kept quiet), in integers
  // (LLVM's fptrunc to bfloat calls compiler-rt, which is not linked).
  auto ints = [&](unsigned bits) {
    llvm::Type* i = b_.getIntNTy(bits);
    return to.lanes > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i, to.lanes)) : i;
  };
  auto splat = [&](unsigned bits, uint64_t value) { return llvm::ConstantInt::get(ints(bits), value); };
  if (to.bits == 16 && (to.code == DataType::kFloat || to.code == DataType::kBFloat) && from.code == DataType::kFloat &&
      from.bits == 64) {
    // float64 to a 16-bit float: narrowed to float32 rounding to odd
    // (toward zero, the last bit set when inexact), then to nearest even
    // once, as float32 keeps more than twice their bits plus two; to nearest
    // twice would give 1 for 1 + 2^-11 + 2^-40, not float16's 1 + 2^-10.
    // (LLVM's own float64 -> float16 calls __truncdfhf2 on CPUs without
    // AVX512-FP16, which the JIT does not link.)
    DataType f32t(DataType::kFloat, 32, from.lanes);
    Value* f = b_.CreateFPTrunc(v, type(f32t));
    Value* back = b_.CreateFPExt(f, v->getType());
    Value* bits = b_.CreateBitCast(f, ints(32));
    Value* away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                   b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v));
    Value* toward_zero = b_.CreateSelect(away, b_.CreateSub(bits, splat(32, 1)), bits);
    Value* odd = b_.CreateSelect(b_.CreateFCmpONE(back, v), b_.CreateOr(toward_zero, splat(32, 1)), bits);
    return cast(to, f32t, b_.CreateBitCast(odd, type(f32t)));
  }
  if (from.code == DataType::kBFloat && to.code != DataType::kBFloat) {
    Value* wide = b_.CreateShl(b_.CreateZExt(b_.CreateBitCast(v, ints(16)), ints(32)), splat(32, 16));
    Value* f32 = b_.CreateBitCast(
        wide, to.lanes > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getFloatTy(), to.lanes))
                           : b_.getFloatTy());
    return cast(to, DataType(DataType::kFloat, 32, to.lanes), f32);
  }
  if (to.code == DataType::kBFloat && from.code != DataType::kBFloat) {
    DataType f32t(DataType::kFloat, 32, from.lanes);
    Value* f = cast(f32t, from, v);
    Value* bits = b_.CreateBitCast(f, ints(32));
    Value* odd = b_.CreateAnd(b_.CreateLShr(bits, splat(32, 16)), splat(32, 1));
    Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(odd, splat(32, 0x7FFF))), splat(32, 16));
    Value* nan = b_.CreateFCmpUNO(f, f);
    Value* half = b_.CreateSelect(nan, splat(32, 0x7FC0), rounded);
    return b_.CreateBitCast(b_.CreateTrunc(half, ints(16)), target);
  }
  if (to.code == DataType::kBool) {
    if (from.code == DataType::kBool) return v;
    if (is_float(from)) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (is_float(to)) {
    if (is_float(from)) return b_.CreateFPCast(v, target);
    return is_unsigned(from) ? b_.CreateUIToFP(v, target) : b_.CreateSIToFP(v, target);
  }
  if (to.code == DataType::kHandle) return v;
  if (is_float(from)) return is_unsigned(to) ? b_.CreateFPToUI(v, target) : b_.CreateFPToSI(v, target);
  return is_unsigned(from) ? b_.CreateZExtOrTrunc(v, target) : b_.CreateSExtOrTrunc(v, target);
}

// The C library's float functions LLVM has no intrinsic for, called per
// lane (the JIT and exported libraries take them from libm).
const std::set<std::string>& libm_unary() {
  static const std::set<std::string> names = {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"};
  return names;
}

Value* FunctionCodegen::libm_call(const std::string& name, Value* x, llvm::Type* t) {
  llvm::Type* scalar = t->getScalarType();
  bool f32 = scalar->isFloatTy();
  if (!f32 && !scalar->isDoubleTy())
    fail(name + " of " + std::string(scalar->isHalfTy() ? "float16" : "this type") +
         ": the C library has float and double");
  llvm::FunctionCallee f =
      module_.getOrInsertFunction(f32 ? name + "f" : name, llvm::FunctionType::get(scalar, {scalar}, false));
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (!vector) return b_.CreateCall(f, {x});
  Value* out = llvm::UndefValue::get(t);
  for (unsigned k = 0; k < vector->getNumElements(); ++k) {
    out = b_.CreateInsertElement(out, b_.CreateCall(f, {b_.CreateExtractElement(x, k)}), k);
  }
  return out;
}

Value* FunctionCodegen::call(const tir::CallNode* op) {
  // A math function of bfloat16: in float32, rounded back (as binary);
  // dot2_bf16 takes its bfloat16 arguments as they are.
  bool bf16 = op->dtype.code == DataType::kBFloat;
  for (const Any& a : op->args) bf16 |= a.cast<tir::PrimExpr>().dtype().code == DataType::kBFloat;
  if (bf16 && op->op != "dot2_bf16") {
    auto wide = [](DataType t) { return t.code == DataType::kBFloat ? DataType(DataType::kFloat, 32, t.lanes) : t; };
    std::vector<tir::PrimExpr> args;
    for (const Any& a : op->args) {
      tir::PrimExpr e = a.cast<tir::PrimExpr>();
      args.push_back(e.dtype().code == DataType::kBFloat ? tir::PrimExpr(tir::Cast(wide(e.dtype()), e)) : e);
    }
    tir::PrimExpr f32 = tir::Call(wide(op->dtype), op->op, args);
    return expr(op->dtype.code == DataType::kBFloat ? tir::PrimExpr(tir::Cast(op->dtype, f32)) : f32);
  }
  std::vector<Value*> args;
  for (const Any& a : op->args) args.push_back(expr(a.cast<tir::PrimExpr>()));
  auto arity = [&](size_t n) {
    if (args.size() != n)
      fail(op->op + " takes " + std::to_string(n) + " argument(s), got " + std::to_string(args.size()));
  };
  llvm::Type* t = type(op->dtype);
  // LLVM's intrinsic `id` of the operands `on` (overloaded on the first's type).
  auto intrinsic_of = [&](llvm::Intrinsic::ID id, const std::vector<Value*>& on) -> Value* {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, id, {on[0]->getType()}), on);
  };
  auto intrinsic = [&](llvm::Intrinsic::ID id) { return intrinsic_of(id, args); };
  const std::string& name = op->op;
  bool f32 = t->getScalarType()->isFloatTy();
  if (name == "exp")
    return arity(1), f32 ? contracted([&] { return emit_exp_f32(b_, args[0]); }) : intrinsic(llvm::Intrinsic::exp);
  if (name == "log")
    return arity(1), f32 ? contracted([&] { return emit_log_f32(b_, args[0]); }) : intrinsic(llvm::Intrinsic::log);
  if (name == "sigmoid" || name == "tanh") {
    arity(1);
    bool sigmoid = name == "sigmoid";
    if (f32) return contracted([&] { return sigmoid ? emit_sigmoid_f32(b_, args[0]) : emit_tanh_f32(b_, args[0]); });
    // float64: the core's expansions over LLVM's exp.
    Value* one = llvm::ConstantFP::get(t, 1.0);
    if (sigmoid)
      return b_.CreateFDiv(one, b_.CreateFAdd(one, intrinsic_of(llvm::Intrinsic::exp, {b_.CreateFNeg(args[0])})));
    Value* e = intrinsic_of(llvm::Intrinsic::exp, {b_.CreateFMul(args[0], llvm::ConstantFP::get(t, 2.0))});
    return b_.CreateFSub(one, b_.CreateFDiv(llvm::ConstantFP::get(t, 2.0), b_.CreateFAdd(e, one)));
  }
  if (name == "erf") {
    arity(1);
    if (f32) return contracted([&] { return emit_erf_f32(b_, args[0]); });
    if (t->getScalarType()->isDoubleTy()) return libm_call("erf", args[0], t);
    // float16: through float32, as the core's expansion computed it.
    llvm::Type* wide =
        t->isVectorTy() ? llvm::VectorType::get(b_.getFloatTy(), llvm::cast<llvm::VectorType>(t)) : b_.getFloatTy();
    Value* x = b_.CreateFPExt(args[0], wide);
    return b_.CreateFPTrunc(contracted([&] { return emit_erf_f32(b_, x); }), t);
  }
  if (name == "sqrt") return arity(1), intrinsic(llvm::Intrinsic::sqrt);
  if (name == "floor") return arity(1), intrinsic(llvm::Intrinsic::floor);
  if (name == "ceil") return arity(1), intrinsic(llvm::Intrinsic::ceil);
  if (name == "round") return arity(1), intrinsic(llvm::Intrinsic::roundeven);
  if (name == "trunc") return arity(1), intrinsic(llvm::Intrinsic::trunc);
  if (name == "sin") return arity(1), intrinsic(llvm::Intrinsic::sin);
  if (name == "cos") return arity(1), intrinsic(llvm::Intrinsic::cos);
  if (name == "pow") return arity(2), intrinsic(llvm::Intrinsic::pow);
  if (name == "fmod") return arity(2), b_.CreateFRem(args[0], args[1]);
  if (name == "abs") {
    arity(1);
    if (args[0]->getType()->isFPOrFPVectorTy()) return intrinsic(llvm::Intrinsic::fabs);
    if (is_unsigned(op->dtype)) return args[0];
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::abs, {args[0]->getType()});
    return b_.CreateCall(f, {args[0], b_.getFalse()});
  }
  if (name == "isnan") return arity(1), b_.CreateFCmpUNO(args[0], args[0]);
  if (name == "bitwise_and") return arity(2), b_.CreateAnd(args[0], args[1]);
  if (name == "bitwise_or") return arity(2), b_.CreateOr(args[0], args[1]);
  if (name == "bitwise_xor") return arity(2), b_.CreateXor(args[0], args[1]);
  if (name == "bitwise_not") return arity(1), b_.CreateNot(args[0]);
  if (name == "shift_left" || name == "shift_right") {
    arity(2);
    // A shift by the width or more is poison in LLVM: it gives 0 here
    // (an arithmetic right shift of a negative value, -1).
    unsigned bits = t->getScalarSizeInBits();
    Value* amount = args[1];
    Value* wide = b_.CreateICmpUGE(amount, llvm::ConstantInt::get(amount->getType(), bits));
    Value* clamped = b_.CreateSelect(wide, llvm::ConstantInt::get(amount->getType(), bits - 1), amount);
    Value* shifted = name == "shift_left"     ? b_.CreateShl(args[0], clamped)
                     : is_unsigned(op->dtype) ? b_.CreateLShr(args[0], clamped)
                                              : b_.CreateAShr(args[0], clamped);
    if (name == "shift_left" || is_unsigned(op->dtype)) {
      shifted = b_.CreateSelect(wide, llvm::Constant::getNullValue(shifted->getType()), shifted);
    }
    return shifted;
  }
  if (name == "dot2_i16") return arity(4), dot2_i16(op, args);
  if (name == "dot2_bf16") return arity(4), dot2_bf16(op, args, nullptr);
  if (name == "dot4_u8i8") return arity(8), dot4_u8i8(op, args, nullptr);
  if (libm_unary().count(name)) return arity(1), libm_call(name, args[0], t);
  if (name == "isinf") {
    arity(1);
    Value* magnitude = intrinsic(llvm::Intrinsic::fabs);
    return b_.CreateFCmpOEQ(magnitude, llvm::ConstantFP::getInfinity(magnitude->getType()));
  }
  if (name == "ret") fail("ret is a statement (evaluate it), not a value");
  fail("the intrinsic '" + name + "' has no LLVM implementation (run LowerIntrinsics for target llvm)");
}

}  // namespace

std::unique_ptr<llvm::Module> new_module(llvm::LLVMContext& context, const llvm::TargetMachine& machine) {
  auto module = std::make_unique<llvm::Module>("loom", context);
  module->setTargetTriple(machine.getTargetTriple().str());
  module->setDataLayout(machine.createDataLayout());
  return module;
}

std::string generate_function(llvm::Module& out, const ir::IRModule& module, const std::string& name,
                              const llvm::TargetMachine& machine) {
  ir::BaseFunc f = module.lookup(name);
  if (const auto* ext = f.as<ir::ExternFuncNode>()) {
    LOOM_THROW(Error) << "llvm: @" << name << " is an extern function of kind '" << ext->kind
                      << "'; its kind's plugin builds it, not the llvm codegen";
  }
  if (!f.as<tir::PrimFuncNode>()) LOOM_THROW(Error) << "llvm: @" << name << " is not a prim function";
  std::string symbol = symbol_for(name);
  FunctionCodegen(out, name, X86Features::of(machine)).emit(downcast<tir::PrimFunc>(f), symbol);
  return symbol;
}

void verify(const llvm::Module& module) {
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream)) {
    LOOM_THROW(Error) << "llvm: internal error, the generated LLVM IR is invalid:\n" << stream.str();
  }
}
}  // namespace loom::llvm_backend
