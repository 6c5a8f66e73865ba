// Matrix products on Intel AMX tiles (docs/low-precision.md, "AMX"):
// runtime.amx.matmul, which graph functions call (call_packed) where the
// pass AMXMatmul put it: bfloat16 x bfloat16 summed in float32
// (TDPBF16PS) and 8-bit x 8-bit summed in int32 (TDPBUSD and its signed
// kinds), 16 x 16 sums per instruction.
//
// The right operand is packed (by runtime.amx.pack, once for a constant,
// or per call) into panels of 16 columns, each a stack of 64-byte rows
// holding a group of consecutive k (2 bfloat16, 4 bytes) for each of the
// 16 columns: the layout a tile of B takes.  The reduction is padded to
// whole tiles with zeros on both operands.  Each task copies 32 rows of
// the left operand into its tiles' order and multiplies them by pairs of
// panels with four accumulator tiles; tasks are shared by the thread
// pool.
//
// On a CPU without AMX (or when the caller asks for it) the same loops
// run with each tile instruction computed element by element as its
// definition says, so the packing and the tails are tested anywhere.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/error.h"

namespace loom::runtime {

namespace {

constexpr int kRows = 16;      // rows of a tile
constexpr int kRowBytes = 64;  // bytes of a tile's row

enum class Kind { kBF16, kUU, kUS, kSU, kSS };  // operand kinds: bfloat16, or (a, b) unsigned/signed bytes

// Whether this process may run AMX tiles: the CPU has AMX-TILE, -BF16
// and -INT8 and the kernel grants the tile data (Linux asks each process
// to request it once).
bool amx_available() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool tile = d & (1u << 24), bf16 = d & (1u << 22), int8 = d & (1u << 25);
    if (!tile || !bf16 || !int8) return false;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

#if defined(__x86_64__)
#define LOOM_AMX __attribute__((target("amx-tile,amx-bf16,amx-int8")))

struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3: the accumulators (rows r of A's block, panel p: 2 r + p);
// 4, 5: A's two row halves; 6, 7: B's two panels.  `a`: the block's rows
// packed, step s's 32 rows of 64 bytes at s * 2 KB.
LOOM_AMX void block_amx(Kind kind, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, int64_t steps, uint8_t* c,
                        int64_t ldc) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  // Each load right before the first product that reads it, so that it
  // overlaps the products before (tiles are not renamed: a load waits
  // for the products that read its tile's previous value).
#define LOOM_AMX_STEP(DP)                                           \
  for (int64_t s = 0; s < steps; ++s) {                             \
    _tile_loadd(4, a + s * 2 * kRows * kRowBytes, kRowBytes);       \
    _tile_loadd(6, b0 + s * kRows * kRowBytes, kRowBytes);          \
    DP(0, 4, 6);                                                    \
    _tile_loadd(7, b1 + s * kRows * kRowBytes, kRowBytes);          \
    DP(1, 4, 7);                                                    \
    _tile_loadd(5, a + (s * 2 + 1) * kRows * kRowBytes, kRowBytes); \
    DP(2, 5, 6);                                                    \
    DP(3, 5, 7);                                                    \
  }
  switch (kind) {
    case Kind::kBF16:
      LOOM_AMX_STEP(_tile_dpbf16ps)
      break;
    case Kind::kUS:
      LOOM_AMX_STEP(_tile_dpbusd)
      break;
    case Kind::kUU:
      LOOM_AMX_STEP(_tile_dpbuud)
      break;
    case Kind::kSU:
      LOOM_AMX_STEP(_tile_dpbsud)
      break;
    case Kind::kSS:
      LOOM_AMX_STEP(_tile_dpbssd)
      break;
  }
#undef LOOM_AMX_STEP
  _tile_stored(0, c, ldc);
  _tile_stored(1, c + kRowBytes, ldc);
  _tile_stored(2, c + kRows * ldc, ldc);
  _tile_stored(3, c + kRows * ldc + kRowBytes, ldc);
}

// Eight tiles of 16 rows of 64 bytes.  A static object: GCC 12 dropped
// the stores into a local one, which it does not see ldtilecfg read.
const TileConfig kTileConfig = [] {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kRows;
    config.colsb[t] = kRowBytes;
  }
  return config;
}();

LOOM_AMX void configure_tiles() { _tile_loadconfig(&kTileConfig); }

LOOM_AMX void release_tiles() { _tile_release(); }
#endif

float bf16_value(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// The same block, each tile instruction computed as its definition says:
// for every row m and column n of the accumulator, the 64-byte group of
// A's row m times the group of B's column n (TDPBF16PS: the two products
// of each pair added in turn in float32; the byte kinds: the four
// products summed in int32).
void block_emulated(Kind kind, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, int64_t steps, uint8_t* c,
                    int64_t ldc) {
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < 2; ++p) {
      const uint8_t* b = p ? b1 : b0;
      for (int m = 0; m < kRows; ++m)
        for (int n = 0; n < kRows; ++n) {
          uint8_t* out = c + (r * kRows + m) * ldc + p * kRowBytes + n * 4;
          if (kind == Kind::kBF16) {
            float sum = 0;
            for (int64_t s = 0; s < steps; ++s)
              for (int k = 0; k < kRows; ++k)
                for (int q = 0; q < 2; ++q) {
                  uint16_t x, y;
                  std::memcpy(&x, a + ((s * 2 + r) * kRows + m) * kRowBytes + (2 * k + q) * 2, 2);
                  std::memcpy(&y, b + (s * kRows + k) * kRowBytes + (2 * n + q) * 2, 2);
                  sum += bf16_value(x) * bf16_value(y);
                }
            std::memcpy(out, &sum, 4);
          } else {
            bool sa = kind == Kind::kSU || kind == Kind::kSS, sb = kind == Kind::kUS || kind == Kind::kSS;
            uint32_t sum = 0;  // int32 arithmetic that wraps
            for (int64_t s = 0; s < steps; ++s)
              for (int k = 0; k < kRows; ++k)
                for (int q = 0; q < 4; ++q) {
                  uint8_t x = a[((s * 2 + r) * kRows + m) * kRowBytes + 4 * k + q],
                          y = b[(s * kRows + k) * kRowBytes + 4 * n + q];
                  int32_t xv = sa ? static_cast<int8_t>(x) : x, yv = sb ? static_cast<int8_t>(y) : y;
                  sum += static_cast<uint32_t>(xv * yv);
                }
            std::memcpy(out, &sum, 4);
          }
        }
    }
}

// b (K, N), or (N, K) transposed, into panels of 16 columns whose rows
// hold G consecutive k of each column (zero past K and N); the panels
// shared by the thread pool.
template <typename T, int G>
void pack_panels(const T* b, int64_t K, int64_t N, bool transposed, int64_t panel_bytes, uint8_t* out) {
  const int64_t panels = (N + kRows - 1) / kRows;
  ThreadPool::global().parallel_for(0, panels, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* panel = reinterpret_cast<T*>(out + p * panel_bytes);
      const int64_t n0 = p * kRows, cols = std::min<int64_t>(kRows, N - n0);
      for (int64_t k0 = 0; k0 < K; k0 += G) {
        T* row = panel + (k0 / G) * kRows * G;
        const int64_t ks = std::min<int64_t>(G, K - k0);
        if (transposed) {
          for (int64_t j = 0; j < cols; ++j)
            for (int64_t q = 0; q < ks; ++q) row[j * G + q] = b[(n0 + j) * K + k0 + q];
        } else if (cols == kRows && ks == G) {
          T block[G][kRows];
          for (int q = 0; q < G; ++q) std::memcpy(block[q], b + (k0 + q) * N + n0, sizeof block[q]);
          for (int j = 0; j < kRows; ++j)
            for (int q = 0; q < G; ++q) row[j * G + q] = block[q][j];
        } else {
          for (int64_t q = 0; q < ks; ++q)
            for (int64_t j = 0; j < cols; ++j) row[j * G + q] = b[(k0 + q) * N + n0 + j];
        }
      }
    }
  });
}

Kind kind_of(DataType a, DataType b) {
  auto byte = [](DataType t) { return (t.code == DataType::kInt || t.code == DataType::kUInt) && t.bits == 8; };
  if (a == DataType::BFloat16() && b == DataType::BFloat16()) return Kind::kBF16;
  if (byte(a) && byte(b)) {
    bool sa = a.code == DataType::kInt, sb = b.code == DataType::kInt;
    return sa ? (sb ? Kind::kSS : Kind::kSU) : (sb ? Kind::kUS : Kind::kUU);
  }
  LOOM_THROW(TypeError) << "runtime.amx.matmul: operands must be bfloat16 and bfloat16, or 8-bit integers, got "
                        << a.to_string() << " and " << b.to_string();
}

void check_host(const NDArray& x, const char* what) {
  if (x->device.device_type != kDLCPU || !x->is_contiguous())
    LOOM_THROW(TypeError) << "runtime.amx: " << what << " must be compact, in host memory; got "
                          << (x->device.device_type != kDLCPU ? "a tensor on another device" : "a strided view");
}

// Bytes of an element, k per column in a row of B's tile (2 or 4), and k
// per tile step (32 or 64), for operands of `dtype`.
struct Geometry {
  int64_t es, group, step;
  explicit Geometry(DataType dtype) : es(dtype.bits / 8), group(kRowBytes / kRows / es), step(kRowBytes / es) {}
  int64_t padded(int64_t k) const { return (k + step - 1) / step * step; }
};

// b (K, N), or (N, K) with `transposed`, packed: panel p (an even count
// of them), row r, column j, element q holds b[r * group + q][p * 16 + j],
// zero past K and N; shape (panels, K padded / group, 16, group).
NDArray pack(const NDArray& b, bool transposed) {
  check_host(b, "b");
  std::vector<int64_t> bs = b.shape_vector();
  if (bs.size() != 2) LOOM_THROW(TypeError) << "runtime.amx: b must have rank 2, got " << bs.size();
  if (b->dtype != DataType::BFloat16() &&
      !((b->dtype.code == DataType::kInt || b->dtype.code == DataType::kUInt) && b->dtype.bits == 8))
    LOOM_THROW(TypeError) << "runtime.amx: b must be bfloat16 or 8-bit integers, got " << b->dtype.to_string();
  const int64_t K = transposed ? bs[1] : bs[0], N = transposed ? bs[0] : bs[1];
  Geometry g(b->dtype);
  const int64_t panels = (N + 2 * kRows - 1) / (2 * kRows) * 2, rows = g.padded(K) / g.group;
  NDArray out = NDArray::empty({panels, rows, kRows, g.group}, b->dtype);
  std::memset(out.data_as<uint8_t>(), 0, static_cast<size_t>(panels * rows * kRowBytes));
  if (g.es == 2)
    pack_panels<uint16_t, 2>(static_cast<const uint16_t*>(b->data()), K, N, transposed, rows * kRowBytes,
                             out.data_as<uint8_t>());
  else
    pack_panels<uint8_t, 4>(static_cast<const uint8_t*>(b->data()), K, N, transposed, rows * kRowBytes,
                            out.data_as<uint8_t>());
  return out;
}

// a (..., M, K) by the packed b of N columns.
NDArray multiply(const NDArray& a, const NDArray& packed, int64_t N, bool emulate) {
  check_host(a, "a");
  check_host(packed, "the packed b");
  Kind kind = kind_of(a->dtype, packed->dtype);
  Geometry g(a->dtype);
  std::vector<int64_t> as = a.shape_vector(), ps = packed.shape_vector();
  if (as.size() < 2) LOOM_THROW(TypeError) << "runtime.amx.matmul: a must have rank 2 or more, got " << as.size();
  const int64_t M = as[as.size() - 2], K = as.back();
  // (The packed b's rows are K padded to whole tile steps: a b packed for
  // another K of the same padding cannot be told apart; the caller passes
  // the b of a's K, as AMXMatmul does.)
  if (ps.size() != 4 || ps[2] != kRows || ps[3] != g.group || ps[0] % 2 != 0 || ps[0] * kRows < N ||
      ps[1] * g.group != g.padded(K)) {
    std::string shape;
    for (size_t k = 0; k < ps.size(); ++k) shape += (k ? ", " : "") + std::to_string(ps[k]);
    LOOM_THROW(TypeError) << "runtime.amx.matmul: a's " << K << " columns against a packed b of shape [" << shape
                          << "] for " << N << " columns; runtime.amx.pack gives [an even number of panels of 16 "
                          << "columns, " << g.padded(K) / g.group << ", 16, " << g.group << "]";
  }
  int64_t batch = 1;
  for (size_t k = 0; k + 2 < as.size(); ++k) batch *= as[k];
  std::vector<int64_t> out_shape(as.begin(), as.end() - 1);
  out_shape.push_back(N);
  NDArray out = NDArray::empty(out_shape, kind == Kind::kBF16 ? DataType::Float(32) : DataType::Int(32));
  if (out->numel() == 0) return out;
  if (K == 0) {
    std::memset(out.data_as<uint8_t>(), 0, static_cast<size_t>(out->numel()) * 4);
    return out;
  }
  const int64_t es = g.es, step = g.step, steps = g.padded(K) / step;
  const int64_t pairs = ps[0] / 2, panel_bytes = ps[1] * kRowBytes;
  const auto* packed_data = static_cast<const uint8_t*>(packed->data());
  const bool amx = !emulate && amx_available();
  auto block = [&](const uint8_t* x, const uint8_t* b0, const uint8_t* b1, uint8_t* c, int64_t ldc) {
#if defined(__x86_64__)
    if (amx) return block_amx(kind, x, b0, b1, steps, c, ldc);
#endif
    block_emulated(kind, x, b0, b1, steps, c, ldc);
  };
  // The batch's matrices are one of batch * M rows against the same b.
  // Tasks: a block of 32 rows by every pair of panels, or by groups of 8
  // pairs where there are fewer than two blocks of rows a thread (so that
  // a product of few rows still shares the threads); each packs
  // its rows step by step, each step's 32 rows of 64 bytes together (zero
  // past K and the rows): a tile is 1 KB in a row, where rows of a matrix
  // a power of two bytes apart would share few cache sets.  A block short
  // of whole tiles is stored in a padded tile first.  (Chunks of the
  // reduction kept in the L1 cache, the sums accumulated between them,
  // were no faster on a Xeon with a 2 MiB L2.)
  const int64_t total_rows = batch * M, row_blocks = (total_rows + 2 * kRows - 1) / (2 * kRows);
  const int64_t pairs_per_task = row_blocks >= 2 * ThreadPool::global().num_threads() ? pairs : 8;
  const int64_t pair_groups = (pairs + pairs_per_task - 1) / pairs_per_task;
  const auto* ad = static_cast<const uint8_t*>(a->data());
  auto* od = out.data_as<uint8_t>();
  ThreadPool::global().parallel_for(0, row_blocks * pair_groups, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
    if (amx) configure_tiles();
#endif
    std::vector<uint8_t> rows_packed, tile(static_cast<size_t>(2 * kRows * 2 * kRowBytes));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t m0 = (t / pair_groups) * 2 * kRows, g0 = (t % pair_groups) * pairs_per_task;
      const int64_t rows = std::min<int64_t>(2 * kRows, total_rows - m0);
      const uint8_t* src = ad + m0 * K * es;
      rows_packed.assign(static_cast<size_t>(steps * 2 * kRows * kRowBytes), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t s = 0; s < steps; ++s) {
          const int64_t k0 = s * step, count = std::min(step, K - k0);
          std::memcpy(rows_packed.data() + (s * 2 * kRows + r) * kRowBytes, src + (r * K + k0) * es,
                      static_cast<size_t>(count * es));
        }
      uint8_t* y = od + m0 * N * 4;
      for (int64_t p = g0; p < std::min(pairs, g0 + pairs_per_task); ++p) {
        const uint8_t* b0 = packed_data + 2 * p * panel_bytes;
        const int64_t n0 = p * 2 * kRows, cols = std::min<int64_t>(2 * kRows, N - n0);
        if (rows == 2 * kRows && cols == 2 * kRows) {
          block(rows_packed.data(), b0, b0 + panel_bytes, y + n0 * 4, N * 4);
          continue;
        }
        block(rows_packed.data(), b0, b0 + panel_bytes, tile.data(), 2 * kRowBytes);
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(y + r * N * 4 + n0 * 4, tile.data() + r * 2 * kRowBytes, static_cast<size_t>(cols * 4));
      }
    }
#if defined(__x86_64__)
    if (amx) release_tiles();
#endif
  });
  return out;
}

// A flag or a count given as a number or a one-element integer tensor
// (how a graph function's call_packed passes a constant).
int64_t integer_of(const Any& x, const char* what) {
  if (x.kind() == AnyKind::kInt) return x.as_int();
  if (x.kind() == AnyKind::kBool) return x.as_bool() ? 1 : 0;
  if (const auto* a = x.kind() == AnyKind::kObject ? dynamic_cast<const NDArrayNode*>(x.object()) : nullptr) {
    NDArray arr(ObjectPtr<Object>(const_cast<NDArrayNode*>(a)));
    if (a->numel() == 1 && a->device.device_type == kDLCPU) {
      if (a->dtype == DataType::Int(64)) return *arr.data_as<int64_t>();
      if (a->dtype == DataType::Int(32)) return *arr.data_as<int32_t>();
      if (a->dtype == DataType::Bool()) return *arr.data_as<uint8_t>() != 0;
    }
  }
  LOOM_THROW(TypeError) << "runtime.amx: " << what << " must be an integer or a one-element integer tensor, got "
                        << x.describe();
}

int64_t columns(const NDArray& b, bool transposed) {
  std::vector<int64_t> bs = b.shape_vector();
  if (bs.size() != 2) LOOM_THROW(TypeError) << "runtime.amx: b must have rank 2, got " << bs.size();
  return transposed ? bs[0] : bs[1];
}

const bool registered = [] {
  auto add = [](const std::string& name, Function f, const std::string& doc) {
    FunctionRegistry::register_function("runtime.amx." + name, std::move(f), doc);
  };
  add("matmul",
      Function::typed(
          [](NDArray a, NDArray b, Any transposed) {
            bool t = integer_of(transposed, "transpose_b") != 0;
            return multiply(a, pack(b, t), columns(b, t), false);
          },
          "runtime.amx.matmul"),
      "matmul(a, b, transpose_b): a (..., M, K) by b (K, N) (or (N, K)) on AMX tiles: bfloat16 summed in float32, "
      "8-bit integers summed in int32; the tile instructions emulated on a CPU without AMX");
  add("matmul_emulated",
      Function::typed(
          [](NDArray a, NDArray b, Any transposed) {
            bool t = integer_of(transposed, "transpose_b") != 0;
            return multiply(a, pack(b, t), columns(b, t), true);
          },
          "runtime.amx.matmul_emulated"),
      "runtime.amx.matmul with the tile instructions emulated, on any CPU (for tests)");
  add("pack",
      Function::typed([](NDArray b, Any transposed) { return pack(b, integer_of(transposed, "transpose_b")); },
                      "runtime.amx.pack"),
      "pack(b, transpose_b): b's panels as matmul_packed takes them (AMXMatmul packs constant weights at compile "
      "time)");
  add("matmul_packed",
      Function::typed(
          [](NDArray a, NDArray packed, Any n) { return multiply(a, packed, integer_of(n, "the columns"), false); },
          "runtime.amx.matmul_packed"),
      "matmul_packed(a, packed, n): a (..., M, K) by a b of n columns packed by runtime.amx.pack");
  add("available", Function::typed([]() { return amx_available(); }, "runtime.amx.available"),
      "available(): whether this process runs AMX tiles (the CPU has them and the system grants them)");
  return true;
}();

}  // namespace

}  // namespace loom::runtime
