#include "simulator.h"

#include <loom/support/error.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <type_traits>

namespace loom::npu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Executor {
 public:
  Executor(const Stream& s, const std::vector<Region>& inputs, const std::vector<Region>& outputs,
           const std::vector<Word>& constants, const Machine& m)
      : s_(s),
        m_(m),
        spad_(static_cast<size_t>(m.scratchpad_words), Word{0.0f}),
        workspace_(s.workspace_words, Word{0.0f}) {
    if (static_cast<int64_t>(s.scratchpad_words) > m.scratchpad_words) {
      LOOM_THROW(Error) << "npu: the stream needs " << s.scratchpad_words << " words of scratchpad, the device has "
                        << m.scratchpad_words;
    }
    if (inputs.size() != s.inputs || outputs.size() != s.outputs) {
      LOOM_THROW(Error) << "npu: the stream takes " << s.inputs << " inputs and " << s.outputs << " outputs, got "
                        << inputs.size() << " and " << outputs.size();
    }
    for (const Buffer& b : s.buffers) {
      switch (b.kind) {
        case BufferKind::kInput:
          buffers_.push_back(inputs[b.index]);
          break;
        case BufferKind::kOutput:
          buffers_.push_back(outputs[b.index]);
          break;
        case BufferKind::kConstant:
          buffers_.push_back(Region{const_cast<Word*>(constants.data()) + b.offset / 4, b.words, b.dtype});
          break;
        case BufferKind::kWorkspace:
          buffers_.push_back(Region{workspace_.data() + b.offset, b.words, b.dtype});
          break;
      }
      if (b.kind == BufferKind::kInput || b.kind == BufferKind::kOutput) {
        const Region& r = buffers_.back();
        const char* what = b.kind == BufferKind::kInput ? "input " : "output ";
        if (r.dtype != b.dtype) {
          LOOM_THROW(Error) << "npu: region " << what << b.index << " is " << dtype_name(r.dtype)
                            << ", the stream's buffer is " << dtype_name(b.dtype);
        }
        if (r.words < b.words) {
          LOOM_THROW(Error) << "npu: region " << what << b.index << " has " << r.words << " words, the stream uses "
                            << b.words;
        }
      }
    }
  }

  Profile run() {
    for (pc_ = 0; pc_ < s_.instructions.size(); ++pc_) {
      const Instruction& i = s_.instructions[pc_];
      if (i.opcode == Opcode::kEnd) break;
      if (i.opcode == Opcode::kBarrier) {
        int64_t t = std::max({clock_[0], clock_[1], clock_[2]});
        clock_[0] = clock_[1] = clock_[2] = t;
        count(i, 0, 0, 0);
        continue;
      }
      int engine = static_cast<int>(engine_of(i.opcode));
      int64_t start = clock_[engine];
      for (int k = 0; k < kSemaphores; ++k) {
        if (!(i.wait >> k & 1)) continue;
        if (signals_[k].empty()) {
          fail("waits on semaphore " + std::to_string(k) +
               ", which no earlier instruction signalled: the stream "
               "would deadlock");
        }
        start = std::max(start, signals_[k].front());
        signals_[k].pop_front();
      }
      int64_t cycles = 0, macs = 0, bytes = 0;
      execute(i, &cycles, &macs, &bytes);
      int64_t end = start + cycles;
      clock_[engine] = end;
      for (int k = 0; k < kSemaphores; ++k)
        if (i.signal >> k & 1) signals_[k].push_back(end);
      count(i, cycles, macs, bytes);
      profile_.cycles = std::max(profile_.cycles, end);
    }
    return profile_;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    LOOM_THROW(Error) << "npu: instruction " << pc_ << " (" << opcode_name(s_.instructions[pc_].opcode)
                      << "): " << what;
  }

  void count(const Instruction& i, int64_t cycles, int64_t macs, int64_t bytes) {
    ClassStats& c = profile_.classes[opcode_name(i.opcode)];
    ++c.instructions;
    c.cycles += cycles;
    c.macs += macs;
    c.dma_bytes += bytes;
    profile_.macs += macs;
    profile_.dma_bytes += bytes;
  }

  // [base + min offset, base + max offset] of an n0 x n1 x n2 walk.
  void check_walk(int64_t base, const int32_t* n, const int32_t* strides, int64_t size, const std::string& what) const {
    int64_t lo = base, hi = base;
    for (int d = 0; d < 3; ++d) {
      if (n[d] < 0) fail("a negative count");
      if (n[d] == 0) return;  // nothing moves
      int64_t span = static_cast<int64_t>(n[d] - 1) * strides[d];
      (span < 0 ? lo : hi) += span;
    }
    if (lo < 0 || hi >= size) {
      fail(what + " [" + std::to_string(lo) + ", " + std::to_string(hi) + "] lies outside its " + std::to_string(size) +
           " words");
    }
  }

  void check_range(int64_t at, int64_t words, const std::string& what) const {
    if (words < 0 || at < 0 || at + words > m_.scratchpad_words) {
      fail(what + " [" + std::to_string(at) + ", " + std::to_string(at + words) + ") lies outside the scratchpad (" +
           std::to_string(m_.scratchpad_words) + " words)");
    }
  }

  // LOAD (device memory -> scratchpad) or STORE of elements of type T: an
  // integer widens into an int32 word and narrows back with saturation.
  template <class T>
  void transfer(T* base, const std::array<int32_t, kFields>& f, bool load) {
    using namespace field;
    for (int64_t i2 = 0; i2 < f[kN2]; ++i2)
      for (int64_t i1 = 0; i1 < f[kN1]; ++i1) {
        T* mem = base + f[kOffset] + i2 * f[kMemS2] + i1 * f[kMemS1];
        Word* sp = spad_.data() + f[kSpad] + i2 * f[kSpadS2] + i1 * f[kSpadS1];
        for (int64_t i0 = 0; i0 < f[kN0]; ++i0) {
          T& a = mem[i0 * f[kMemS0]];
          Word& b = sp[i0 * f[kSpadS0]];
          if constexpr (std::is_same_v<T, float>) {
            if (load)
              b.f = a;
            else
              a = b.f;
          } else if (load) {
            b.i = a;
          } else {
            a = static_cast<T>(std::clamp<int64_t>(b.i, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
          }
        }
      }
  }

  void execute(const Instruction& i, int64_t* cycles, int64_t* macs, int64_t* bytes) {
    using namespace field;
    const auto& f = i.f;
    switch (i.opcode) {
      case Opcode::kLoad:
      case Opcode::kStore: {
        const Region& buf = buffers_[f[kBuffer]];
        if (i.dtype != buf.dtype) {
          fail(std::string("a ") + dtype_name(i.dtype) + " transfer of buffer " + std::to_string(f[kBuffer]) +
               ", which is " + dtype_name(buf.dtype));
        }
        int32_t n[3] = {f[kN0], f[kN1], f[kN2]};
        int32_t ms[3] = {f[kMemS0], f[kMemS1], f[kMemS2]}, ss[3] = {f[kSpadS0], f[kSpadS1], f[kSpadS2]};
        check_walk(f[kOffset], n, ms, static_cast<int64_t>(buf.words),
                   "buffer " + std::to_string(f[kBuffer]) + " range");
        check_walk(f[kSpad], n, ss, m_.scratchpad_words, "scratchpad range");
        bool load = i.opcode == Opcode::kLoad;
        switch (buf.dtype) {
          case Dtype::kFloat32:
            transfer(static_cast<float*>(buf.data), f, load);
            break;
          case Dtype::kInt32:
            transfer(static_cast<int32_t*>(buf.data), f, load);
            break;
          case Dtype::kInt8:
            transfer(static_cast<int8_t*>(buf.data), f, load);
            break;
          case Dtype::kUInt8:
            transfer(static_cast<uint8_t*>(buf.data), f, load);
            break;
        }
        *bytes = int64_t{n[0]} * n[1] * n[2] * element_bytes(buf.dtype);
        *cycles = m_.dma_latency + ceil_div(*bytes, m_.dma_bytes_per_cycle);
        return;
      }
      case Opcode::kFill: {
        check_range(f[kFillSpad], f[kFillN], "FILL");
        Word value;
        if (i.dtype == Dtype::kFloat32)
          value.f = as_float(f[kFillValue]);
        else
          value.i = f[kFillValue];
        std::fill_n(spad_.begin() + f[kFillSpad], f[kFillN], value);
        *cycles = 8 + ceil_div(int64_t{f[kFillN]} * 4, m_.dma_bytes_per_cycle);
        return;
      }
      case Opcode::kMatmul:
        if (i.dtype != Dtype::kFloat32 && i.dtype != Dtype::kInt8) fail("MATMUL takes fp32 or int8");
        matmul(f, i.dtype == Dtype::kInt8, cycles, macs);
        return;
      case Opcode::kVec:
        vec(f, i.dtype, cycles);
        return;
      case Opcode::kPool:
        if (i.dtype != Dtype::kFloat32) fail("POOL takes fp32 only");
        pool(f, cycles);
        return;
      default:
        fail("not executable");
    }
  }

  // An int8 MATMUL's operand: int8 or uint8 values, as loaded.
  void check_8bit(const Word* w, int64_t n, const char* operand) const {
    for (int64_t k = 0; k < n; ++k) {
      if (w[k].i < -128 || w[k].i > 255) {
        fail(std::string("operand ") + operand + " holds " + std::to_string(w[k].i) + " at word " +
             std::to_string(w - spad_.data() + k) + ", not an 8-bit value (int8 MATMUL)");
      }
    }
  }

  void matmul(const std::array<int32_t, kFields>& f, bool integer, int64_t* cycles, int64_t* macs) {
    using namespace field;
    int64_t mode = f[kMode], M = f[kM], N = f[kN], K = f[kK];
    if (M <= 0 || N <= 0 || K <= 0) fail("M, N and K must be positive");
    if (!integer && (f[kZeroA] || f[kZeroB])) fail("zero points are the int8 MATMUL's");
    check_range(f[kC], M * N, "operand c");
    if (mode != 0 && mode != 1 && mode != 2) fail("unknown mode " + std::to_string(mode));
    int64_t C = 0, H = 0, W = 0;
    if (mode != 0) {
      C = f[kCin], H = f[kH], W = f[kW];
      int64_t kh = f[kKh], kw = f[kKw], sh = f[kSh], sw = f[kSw], dh = f[kDh], dw = f[kDw], Wo = f[kWo];
      if (C <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0 || Wo <= 0 || N % Wo != 0) {
        fail("a window geometry that does not hold together");
      }
      if ((N / Wo - 1) * sh + (kh - 1) * dh >= H || (Wo - 1) * sw + (kw - 1) * dw >= W)
        fail("the windows leave the input tile");
      bool depthwise = mode == 2;
      if ((depthwise && (C != M || K != kh * kw)) || (!depthwise && K != C * kh * kw)) {
        fail("K does not match the input tile (conv: C*kh*kw, depthwise: kh*kw with M = C)");
      }
    }
    check_range(f[kA], M * K, "operand a");
    check_range(f[kB], mode == 0 ? K * N : C * H * W, "operand b");
    if (integer) {
      check_8bit(spad_.data() + f[kA], M * K, "a");
      check_8bit(spad_.data() + f[kB], mode == 0 ? K * N : C * H * W, "b");
      multiply<int64_t>(f);
    } else {
      multiply<float>(f);
    }
    *macs = M * N * K;
    *cycles = 32 + ceil_div(M, m_.rows) * ceil_div(N, m_.cols) * K;
  }

  // c (+)= a . b in the order the spec fixes, summed in Acc: fp32, or
  // (int8) int64 kept modulo 2^32 as int32 words wrap, the zero points
  // subtracted.
  template <class Acc>
  void multiply(const std::array<int32_t, kFields>& f) {
    using namespace field;
    int64_t mode = f[kMode], M = f[kM], N = f[kN], K = f[kK];
    Word* c = spad_.data() + f[kC];
    const Word* a = spad_.data() + f[kA];
    const Word* b = spad_.data() + f[kB];
    bool acc = f[kAccumulate] != 0;
    constexpr bool kFloat = std::is_same_v<Acc, float>;
    int64_t za = f[kZeroA], zb = f[kZeroB];
    auto product = [&](const Word& x, const Word& y) -> Acc {  // a's word, b's word
      if constexpr (kFloat)
        return x.f * y.f;
      else
        return (int64_t{x.i} - za) * (int64_t{y.i} - zb);
    };
    auto init = [&](const Word& w) -> Acc {
      if constexpr (kFloat)
        return acc ? w.f : 0.0f;
      else
        return acc ? int64_t{w.i} : 0;
    };
    auto put = [](Word& w, Acc s) {
      if constexpr (kFloat)
        w.f = s;
      else
        w.i = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(s)));
    };
    if (mode == 0) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          Acc s = init(c[m * N + n]);
          for (int64_t k = 0; k < K; ++k) s += product(a[m * K + k], b[k * N + n]);
          put(c[m * N + n], s);
        }
      return;
    }
    int64_t C = f[kCin], H = f[kH], W = f[kW], kh = f[kKh], kw = f[kKw], sh = f[kSh], sw = f[kSw], dh = f[kDh],
            dw = f[kDw], Wo = f[kWo], Ho = N / Wo;
    bool depthwise = mode == 2;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          Acc s = init(c[m * N + oy * Wo + ox]);
          for (int64_t ci = depthwise ? m : 0; ci < (depthwise ? m + 1 : C); ++ci) {
            const Word* plane = b + ci * H * W;
            const Word* w = a + m * K + (depthwise ? 0 : ci * kh * kw);
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx)
                s += product(w[ky * kw + kx], plane[(oy * sh + ky * dh) * W + ox * sw + kx * dw]);
          }
          put(c[m * N + oy * Wo + ox], s);
        }
  }

  void vec(const std::array<int32_t, kFields>& f, Dtype dtype, int64_t* cycles) {
    using namespace field;
    int64_t op = f[kOp], n = f[kVecN];
    if (op < 0 || op >= kVecOps) fail("unknown vector op " + std::to_string(op));
    VecOp v = static_cast<VecOp>(op);
    bool integer_result = v == VecOp::kQuantize;
    if (integer_result != (dtype == Dtype::kInt8 || dtype == Dtype::kUInt8) ||
        (!integer_result && dtype != Dtype::kFloat32)) {
      fail(std::string("vector op ") + std::to_string(op) + " with dtype " + dtype_name(dtype) +
           (integer_result ? " (QUANTIZE makes int8 or uint8)" : " (it makes fp32)"));
    }
    check_range(f[kDst], n, "dst");
    check_range(f[kSrc0], n, "src0");
    Word* dst = spad_.data() + f[kDst];
    const Word* a = spad_.data() + f[kSrc0];
    const Word* b = nullptr;
    const Word* b2 = nullptr;
    int64_t channels = f[kChannels], inner = f[kInner];
    if (v == VecOp::kAdd || v == VecOp::kMul || v == VecOp::kMax || v == VecOp::kScaleAdd) {
      check_range(f[kSrc1], n, "src1");
      b = spad_.data() + f[kSrc1];
    }
    if (v == VecOp::kAddChannel || v == VecOp::kMulChannel || v == VecOp::kMulAddChannel) {
      if (channels <= 0 || inner <= 0) fail("channels and inner must be positive");
      check_range(f[kSrc1], channels, "src1");
      b = spad_.data() + f[kSrc1];
      if (v == VecOp::kMulAddChannel) {
        check_range(f[kSrc2], channels, "src2");
        b2 = spad_.data() + f[kSrc2];
      }
    }
    float lo = as_float(f[kImm0]), hi = as_float(f[kImm1]);
    float qlo = dtype == Dtype::kUInt8 ? 0.0f : -128.0f, qhi = dtype == Dtype::kUInt8 ? 255.0f : 127.0f;
    for (int64_t i = 0; i < n; ++i) {
      Word x = a[i];
      switch (v) {
        case VecOp::kAdd:
          x.f += b[i].f;
          break;
        case VecOp::kMul:
          x.f *= b[i].f;
          break;
        case VecOp::kMax:
          x.f = std::max(x.f, b[i].f);
          break;
        case VecOp::kAddChannel:
          x.f += b[(i / inner) % channels].f;
          break;
        case VecOp::kMulChannel:
          x.f *= b[(i / inner) % channels].f;
          break;
        case VecOp::kRelu:
          x.f = std::max(x.f, 0.0f);
          break;
        case VecOp::kClip:
          x.f = std::min(std::max(x.f, lo), hi);
          break;
        case VecOp::kCopy:
          break;
        case VecOp::kScale:
          x.f *= lo;
          break;
        case VecOp::kToFloat:
          x.f = static_cast<float>(x.i);
          break;
        case VecOp::kMulAddChannel: {
          int64_t c = (i / inner) % channels;
          x.f = std::fma(x.f, b[c].f, b2[c].f);
          break;
        }
        case VecOp::kQuantize: {
          // round half to even (the default rounding mode), then the zero
          // point and the range, in fp32 as the llvm target computes it.
          float q = std::nearbyint(x.f / lo) + static_cast<float>(f[kImm1]);
          x.i = std::isnan(q) ? f[kImm1] : static_cast<int32_t>(std::min(std::max(q, qlo), qhi));
          break;
        }
        case VecOp::kDequantize:
          x.f = static_cast<float>(int64_t{x.i} - f[kImm1]) * lo;
          break;
        case VecOp::kScaleAdd:
          x.f = std::fma(x.f, lo, b[i].f);
          break;
      }
      dst[i] = x;
    }
    *cycles = 8 + ceil_div(n, m_.lanes);
  }

  void pool(const std::array<int32_t, kFields>& f, int64_t* cycles) {
    using namespace field;
    int64_t mode = f[kPoolMode], C = f[kPoolC], H = f[kPoolH], W = f[kPoolW], kh = f[kPoolKh], kw = f[kPoolKw],
            sh = f[kPoolSh], sw = f[kPoolSw], Ho = f[kPoolHo], Wo = f[kPoolWo];
    if (mode != 0 && mode != 1) fail("unknown pooling mode " + std::to_string(mode));
    if (C <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || Ho <= 0 || Wo <= 0)
      fail("a window geometry that does not hold together");
    if ((Ho - 1) * sh + kh > H || (Wo - 1) * sw + kw > W) fail("the windows leave the input tile");
    check_range(f[kPoolSrc], C * H * W, "src");
    check_range(f[kPoolDst], C * Ho * Wo, "dst");
    const Word* in = spad_.data() + f[kPoolSrc];
    Word* out = spad_.data() + f[kPoolDst];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          float s = mode == 0 ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              float x = in[(c * H + oy * sh + ky) * W + ox * sw + kx].f;
              s = mode == 0 ? std::max(s, x) : s + x;
            }
          out[(c * Ho + oy) * Wo + ox].f = s;
        }
    *cycles = 8 + ceil_div(C * Ho * Wo * kh * kw, m_.lanes);
  }

  const Stream& s_;
  Machine m_;
  std::vector<Word> spad_;
  std::vector<Word> workspace_;
  std::vector<Region> buffers_;
  std::deque<int64_t> signals_[kSemaphores];
  int64_t clock_[3] = {0, 0, 0};
  size_t pc_ = 0;
  Profile profile_;
};
}  // namespace

Profile execute(const Stream& stream, const std::vector<Region>& inputs, const std::vector<Region>& outputs,
                const std::vector<Word>& constants, const Machine& machine) {
  return Executor(stream, inputs, outputs, constants, machine).run();
}

}  // namespace loom::npu
