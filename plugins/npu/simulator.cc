#include "simulator.h"

#include <loom/support/error.h>

#include <algorithm>
#include <deque>
#include <limits>

namespace loom::npu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Executor {
 public:
  Executor(const Stream& s, const std::vector<Region>& inputs, const std::vector<Region>& outputs,
           const std::vector<float>& constants, const Machine& m)
      : s_(s), m_(m), spad_(static_cast<size_t>(m.scratchpad_words), 0.0f), workspace_(s.workspace_words, 0.0f) {
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
          buffers_.push_back(Region{const_cast<float*>(constants.data()) + b.offset / 4, b.words});
          break;
        case BufferKind::kWorkspace:
          buffers_.push_back(Region{workspace_.data() + b.offset, b.words});
          break;
      }
      if ((b.kind == BufferKind::kInput || b.kind == BufferKind::kOutput) && buffers_.back().words < b.words) {
        LOOM_THROW(Error) << "npu: region " << (b.kind == BufferKind::kInput ? "input " : "output ") << b.index
                          << " has " << buffers_.back().words << " words, the stream uses " << b.words;
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

  void execute(const Instruction& i, int64_t* cycles, int64_t* macs, int64_t* bytes) {
    using namespace field;
    const auto& f = i.f;
    switch (i.opcode) {
      case Opcode::kLoad:
      case Opcode::kStore: {
        const Region& buf = buffers_[f[kBuffer]];
        int32_t n[3] = {f[kN0], f[kN1], f[kN2]};
        int32_t ms[3] = {f[kMemS0], f[kMemS1], f[kMemS2]}, ss[3] = {f[kSpadS0], f[kSpadS1], f[kSpadS2]};
        check_walk(f[kOffset], n, ms, static_cast<int64_t>(buf.words),
                   "buffer " + std::to_string(f[kBuffer]) + " range");
        check_walk(f[kSpad], n, ss, m_.scratchpad_words, "scratchpad range");
        bool load = i.opcode == Opcode::kLoad;
        for (int64_t i2 = 0; i2 < n[2]; ++i2)
          for (int64_t i1 = 0; i1 < n[1]; ++i1) {
            int64_t mem = f[kOffset] + i2 * ms[2] + i1 * ms[1], sp = f[kSpad] + i2 * ss[2] + i1 * ss[1];
            for (int64_t i0 = 0; i0 < n[0]; ++i0) {
              float& a = buf.data[mem + i0 * ms[0]];
              float& b = spad_[sp + i0 * ss[0]];
              if (load)
                b = a;
              else
                a = b;
            }
          }
        *bytes = int64_t{n[0]} * n[1] * n[2] * 4;
        *cycles = m_.dma_latency + ceil_div(*bytes, m_.dma_bytes_per_cycle);
        return;
      }
      case Opcode::kFill: {
        check_range(f[kFillSpad], f[kFillN], "FILL");
        std::fill_n(spad_.begin() + f[kFillSpad], f[kFillN], as_float(f[kFillValue]));
        *cycles = 8 + ceil_div(int64_t{f[kFillN]} * 4, m_.dma_bytes_per_cycle);
        return;
      }
      case Opcode::kMatmul:
        matmul(f, cycles, macs);
        return;
      case Opcode::kVec:
        vec(f, cycles);
        return;
      case Opcode::kPool:
        pool(f, cycles);
        return;
      default:
        fail("not executable");
    }
  }

  void matmul(const std::array<int32_t, kFields>& f, int64_t* cycles, int64_t* macs) {
    using namespace field;
    int64_t mode = f[kMode], M = f[kM], N = f[kN], K = f[kK];
    if (M <= 0 || N <= 0 || K <= 0) fail("M, N and K must be positive");
    check_range(f[kC], M * N, "operand c");
    float* c = spad_.data() + f[kC];
    bool acc = f[kAccumulate] != 0;
    if (mode == 0) {
      check_range(f[kA], M * K, "operand a");
      check_range(f[kB], K * N, "operand b");
      const float* a = spad_.data() + f[kA];
      const float* b = spad_.data() + f[kB];
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float s = acc ? c[m * N + n] : 0.0f;
          for (int64_t k = 0; k < K; ++k) s += a[m * K + k] * b[k * N + n];
          c[m * N + n] = s;
        }
      *macs = M * N * K;
      *cycles = 32 + ceil_div(M, m_.rows) * ceil_div(N, m_.cols) * K;
      return;
    }
    if (mode != 1 && mode != 2) fail("unknown mode " + std::to_string(mode));
    int64_t C = f[kCin], H = f[kH], W = f[kW], kh = f[kKh], kw = f[kKw], sh = f[kSh], sw = f[kSw], dh = f[kDh],
            dw = f[kDw], Wo = f[kWo];
    if (C <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0 || Wo <= 0 || N % Wo != 0) {
      fail("a window geometry that does not hold together");
    }
    int64_t Ho = N / Wo;
    if ((Ho - 1) * sh + (kh - 1) * dh >= H || (Wo - 1) * sw + (kw - 1) * dw >= W)
      fail("the windows leave the input tile");
    bool depthwise = mode == 2;
    if ((depthwise && (C != M || K != kh * kw)) || (!depthwise && K != C * kh * kw)) {
      fail("K does not match the input tile (conv: C*kh*kw, depthwise: kh*kw with M = C)");
    }
    check_range(f[kA], M * K, "operand a");
    check_range(f[kB], C * H * W, "operand b");
    const float* a = spad_.data() + f[kA];
    const float* in = spad_.data() + f[kB];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          float s = acc ? c[m * N + oy * Wo + ox] : 0.0f;
          for (int64_t ci = depthwise ? m : 0; ci < (depthwise ? m + 1 : C); ++ci) {
            const float* plane = in + ci * H * W;
            const float* w = a + m * K + (depthwise ? 0 : ci * kh * kw);
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx)
                s += plane[(oy * sh + ky * dh) * W + ox * sw + kx * dw] * w[ky * kw + kx];
          }
          c[m * N + oy * Wo + ox] = s;
        }
    *macs = M * N * K;
    *cycles = 32 + ceil_div(M, m_.rows) * ceil_div(N, m_.cols) * K;
  }

  void vec(const std::array<int32_t, kFields>& f, int64_t* cycles) {
    using namespace field;
    int64_t op = f[kOp], n = f[kVecN];
    if (op < 0 || op > 8) fail("unknown vector op " + std::to_string(op));
    check_range(f[kDst], n, "dst");
    check_range(f[kSrc0], n, "src0");
    float* dst = spad_.data() + f[kDst];
    const float* a = spad_.data() + f[kSrc0];
    const float* b = nullptr;
    int64_t channels = f[kChannels], inner = f[kInner];
    VecOp v = static_cast<VecOp>(op);
    if (v == VecOp::kAdd || v == VecOp::kMul || v == VecOp::kMax) {
      check_range(f[kSrc1], n, "src1");
      b = spad_.data() + f[kSrc1];
    }
    if (v == VecOp::kAddChannel || v == VecOp::kMulChannel) {
      if (channels <= 0 || inner <= 0) fail("channels and inner must be positive");
      check_range(f[kSrc1], channels, "src1");
      b = spad_.data() + f[kSrc1];
    }
    float lo = as_float(f[kImm0]), hi = as_float(f[kImm1]);
    for (int64_t i = 0; i < n; ++i) {
      float x = a[i];
      switch (v) {
        case VecOp::kAdd:
          x += b[i];
          break;
        case VecOp::kMul:
          x *= b[i];
          break;
        case VecOp::kMax:
          x = std::max(x, b[i]);
          break;
        case VecOp::kAddChannel:
          x += b[(i / inner) % channels];
          break;
        case VecOp::kMulChannel:
          x *= b[(i / inner) % channels];
          break;
        case VecOp::kRelu:
          x = std::max(x, 0.0f);
          break;
        case VecOp::kClip:
          x = std::min(std::max(x, lo), hi);
          break;
        case VecOp::kCopy:
          break;
        case VecOp::kScale:
          x *= lo;
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
    const float* in = spad_.data() + f[kPoolSrc];
    float* out = spad_.data() + f[kPoolDst];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          float s = mode == 0 ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              float x = in[(c * H + oy * sh + ky) * W + ox * sw + kx];
              s = mode == 0 ? std::max(s, x) : s + x;
            }
          out[(c * Ho + oy) * Wo + ox] = s;
        }
    *cycles = 8 + ceil_div(C * Ho * Wo * kh * kw, m_.lanes);
  }

  const Stream& s_;
  Machine m_;
  std::vector<float> spad_;
  std::vector<float> workspace_;
  std::vector<Region> buffers_;
  std::deque<int64_t> signals_[kSemaphores];
  int64_t clock_[3] = {0, 0, 0};
  size_t pc_ = 0;
  Profile profile_;
};
}  // namespace

Profile execute(const Stream& stream, const std::vector<Region>& inputs, const std::vector<Region>& outputs,
                const std::vector<float>& constants, const Machine& machine) {
  return Executor(stream, inputs, outputs, constants, machine).run();
}

}  // namespace loom::npu
