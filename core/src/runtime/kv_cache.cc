// The KV cache and its attention (docs/llm.md, "The KV cache"); the layout
// and the rules are in loom/runtime/kv_cache.h.  Registers the operations as
// runtime.kv_cache.* in the global registry, which is how graph functions
// (call_packed), Python and the C API reach them.
#include "loom/runtime/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/error.h"
#include "loom/support/size.h"

namespace loom::runtime {

LOOM_REGISTER_OBJECT(KVCacheNode);

namespace {
constexpr int64_t kMaxElements = int64_t{1} << 40;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LOOM_KV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LOOM_KV_CLONES
#endif

#pragma GCC diagnostic ignored "-Wpsabi"  // Float8 values stay inside this file's inlined helpers
// Eight floats, as one AVX register or two SSE ones (GCC's vector
// extension; loads and stores through memcpy, so unaligned).
typedef float Float8 __attribute__((vector_size(32)));
inline Float8 load8(const float* p) {
  Float8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, Float8 v) { std::memcpy(p, &v, sizeof v); }

typedef int32_t Int8 __attribute__((vector_size(32)));
inline Float8 splat(float x) { return Float8{x, x, x, x, x, x, x, x}; }

// e^x for x <= 0 (scores minus their row's maximum), eight at a time:
// Cephes' expf, a polynomial on [-ln2/2, ln2/2] scaled by 2^n (relative
// error about 2e-7); n rounded by the 1.5 * 2^23 trick, so every step is a
// plain vector operation.
inline Float8 exp_nonpositive(Float8 x) {
  const Float8 low = splat(-87.0f);
  x = x < low ? low : x;
  const Float8 magic = splat(12582912.0f);
  const Float8 shifted = x * splat(1.44269504088896341f) + magic;
  const Float8 n = shifted - magic;
  const Float8 r = x - n * splat(0.693359375f) + n * splat(2.12194440e-4f);
  Float8 y = splat(1.9875691500e-4f);
  y = y * r + splat(1.3981999507e-3f);
  y = y * r + splat(8.3334519073e-3f);
  y = y * r + splat(4.1665795894e-2f);
  y = y * r + splat(1.6666665459e-1f);
  y = y * r + splat(5.0000001201e-1f);
  y = y * r * r + r + splat(1.0f);
  // shifted's low mantissa bits hold n (plus 2^22 + 2^23 above them).
  const Int8 bits = (((Int8)shifted - (Int8)magic) + 127) << 23;
  return y * (Float8)bits;
}

// out[0 .. 8 * V) += sum over j of p[j] * values[j * d ...]: V vectors of
// accumulators held in registers across the whole row.
template <int V>
inline void weighted_sum(const float* __restrict p, const float* __restrict values, int64_t count, int64_t d,
                         float* __restrict out) {
  Float8 acc[V];
#pragma GCC unroll 8
  for (int u = 0; u < V; ++u) acc[u] = Float8{};
  for (int64_t j = 0; j < count; ++j) {
    const Float8 w = splat(p[j]);
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) acc[u] += w * load8(values + j * d + 8 * u);
  }
#pragma GCC unroll 8
  for (int u = 0; u < V; ++u) store8(out + 8 * u, acc[u]);
}

// The `group` query rows that share one KV head (contiguous, `d` apart)
// against `count` key rows: scores, softmax, weighted values.  Each key
// and value row is loaded once for the whole group.  `scores` holds
// group * count floats.
LOOM_KV_CLONES
void attend_group(const float* __restrict q, const float* __restrict keys, const float* __restrict values,
                  int64_t count, int64_t d, int64_t group, float scale, float* __restrict scores,
                  float* __restrict out) {
  const int64_t whole = d / 8 * 8;
  // Four keys at a time: four independent chains of multiply-adds, summed
  // across lanes together.
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float* k = keys + j * d;
    for (int64_t h = 0; h < group; ++h) {
      const float* qh = q + h * d;
      Float8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
      for (int64_t e = 0; e < whole; e += 8) {
        const Float8 x = load8(qh + e);
        a0 += x * load8(k + e);
        a1 += x * load8(k + d + e);
        a2 += x * load8(k + 2 * d + e);
        a3 += x * load8(k + 3 * d + e);
      }
      float sum[4] = {0, 0, 0, 0};
      for (int64_t e = whole; e < d; ++e)
        for (int r = 0; r < 4; ++r) sum[r] += qh[e] * k[r * d + e];
      for (int l = 0; l < 8; ++l) {
        sum[0] += a0[l];
        sum[1] += a1[l];
        sum[2] += a2[l];
        sum[3] += a3[l];
      }
      for (int r = 0; r < 4; ++r) scores[h * count + j + r] = sum[r] * scale;
    }
  }
  for (; j < count; ++j) {
    const float* k = keys + j * d;
    for (int64_t h = 0; h < group; ++h) {
      const float* qh = q + h * d;
      Float8 acc = {};
      int64_t e = 0;
      for (; e < whole; e += 8) acc += load8(qh + e) * load8(k + e);
      float sum = 0;
      for (; e < d; ++e) sum += qh[e] * k[e];
      for (int l = 0; l < 8; ++l) sum += acc[l];
      scores[h * count + j] = sum * scale;
    }
  }
  for (int64_t h = 0; h < group; ++h) {
    float* row = scores + h * count;
    float top = -std::numeric_limits<float>::infinity(), total = 0;
    for (int64_t i = 0; i < count; ++i) top = std::max(top, row[i]);
    int64_t i = 0;
    Float8 sums = {};
    for (; i + 8 <= count; i += 8) {
      const Float8 e = exp_nonpositive(load8(row + i) - splat(top));
      store8(row + i, e);
      sums += e;
    }
    for (; i < count; ++i) {
      float tail[8] = {row[i] - top, 0, 0, 0, 0, 0, 0, 0};
      row[i] = exp_nonpositive(load8(tail))[0];
      total += row[i];
    }
    for (int l = 0; l < 8; ++l) total += sums[l];
    const float inverse = 1.0f / total;
    for (i = 0; i < count; ++i) row[i] *= inverse;
    float* o = out + h * d;
    int64_t e = 0;
    for (; e + 64 <= whole; e += 64) weighted_sum<8>(row, values + e, count, d, o + e);
    for (; e + 32 <= whole; e += 32) weighted_sum<4>(row, values + e, count, d, o + e);
    for (; e < whole; e += 8) weighted_sum<1>(row, values + e, count, d, o + e);
    for (; e < d; ++e) {
      float sum = 0;
      for (i = 0; i < count; ++i) sum += row[i] * values[i * d + e];
      o[e] = sum;
    }
  }
}

void check_positive(const char* what, int64_t value) {
  if (value <= 0) LOOM_THROW(Error) << "KV cache: " << what << " must be positive, got " << value;
}
}  // namespace

KVCacheNode::KVCacheNode(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity, int64_t max_sequences)
    : layers_(layers), kv_heads_(kv_heads), head_dim_(head_dim), capacity_(capacity), max_sequences_(max_sequences) {
  check_positive("layers", layers);
  check_positive("kv_heads", kv_heads);
  check_positive("head_dim", head_dim);
  check_positive("capacity", capacity);
  check_positive("max_sequences", max_sequences);
  double per_sequence = 2.0 * static_cast<double>(layers) * kv_heads * capacity * head_dim;
  if (per_sequence > static_cast<double>(kMaxElements)) {
    LOOM_THROW(Error) << "KV cache: one sequence would hold " << per_sequence << " floats (layers " << layers
                      << ", kv_heads " << kv_heads << ", capacity " << capacity << ", head_dim " << head_dim
                      << "); the limit is " << kMaxElements;
  }
}

KVCacheNode::Sequence& KVCacheNode::find(int64_t seq, const char* what) {
  return const_cast<Sequence&>(static_cast<const KVCacheNode*>(this)->find(seq, what));
}

const KVCacheNode::Sequence& KVCacheNode::find(int64_t seq, const char* what) const {
  auto found = sequences_.find(seq);
  if (found == sequences_.end()) {
    std::ostringstream ids;
    for (const auto& [id, s] : sequences_) ids << (ids.tellp() > 0 ? ", " : "") << id;
    LOOM_THROW(Error) << "KV cache: " << what << ": no sequence " << seq << " (the cache holds "
                      << (sequences_.empty() ? std::string("none") : ids.str()) << ")";
  }
  return found->second;
}

float* KVCacheNode::block(Sequence& s, int64_t layer, bool values, int64_t head) const {
  return s.data.data() + (((layer * 2 + (values ? 1 : 0)) * kv_heads_ + head) * capacity_) * head_dim_;
}

void KVCacheNode::add_sequence(int64_t seq) {
  if (in_step_) LOOM_THROW(Error) << "KV cache: add_sequence(" << seq << ") inside a step; call end_step first";
  if (seq < 0) LOOM_THROW(Error) << "KV cache: a sequence id must not be negative, got " << seq;
  if (sequences_.count(seq)) LOOM_THROW(Error) << "KV cache: sequence " << seq << " exists already";
  if (static_cast<int64_t>(sequences_.size()) >= max_sequences_) {
    LOOM_THROW(Error) << "KV cache: cannot add sequence " << seq << ": the cache holds " << sequences_.size()
                      << " sequences, its max_sequences";
  }
  Sequence s;
  s.data.resize(static_cast<size_t>(2 * layers_ * kv_heads_ * capacity_ * head_dim_));
  sequences_.emplace(seq, std::move(s));
}

void KVCacheNode::remove_sequence(int64_t seq) {
  if (in_step_) LOOM_THROW(Error) << "KV cache: remove_sequence(" << seq << ") inside a step; call end_step first";
  find(seq, "remove_sequence");
  sequences_.erase(seq);
}

void KVCacheNode::fork_sequence(int64_t parent, int64_t child, int64_t length) {
  const Sequence& p = find(parent, "fork_sequence");
  if (length < 0) length = p.length;
  if (length > p.length) {
    LOOM_THROW(Error) << "KV cache: fork_sequence: sequence " << parent << " holds " << p.length
                      << " tokens; cannot fork its first " << length;
  }
  add_sequence(child);  // std::map: `p` stays valid
  Sequence& c = sequences_.at(child);
  for (int64_t layer = 0; layer < layers_; ++layer)
    for (int values = 0; values < 2; ++values)
      for (int64_t h = 0; h < kv_heads_; ++h) {
        const float* src = block(const_cast<Sequence&>(p), layer, values != 0, h);
        std::memcpy(block(c, layer, values != 0, h), src, static_cast<size_t>(length * head_dim_) * sizeof(float));
      }
  c.length = length;
}

void KVCacheNode::pop_tokens(int64_t seq, int64_t count) {
  if (in_step_) LOOM_THROW(Error) << "KV cache: pop_tokens(" << seq << ") inside a step; call end_step first";
  Sequence& s = find(seq, "pop_tokens");
  if (count < 0 || count > s.length) {
    LOOM_THROW(Error) << "KV cache: pop_tokens: sequence " << seq << " holds " << s.length << " tokens; cannot pop "
                      << count;
  }
  s.length -= count;
}

int64_t KVCacheNode::sequence_length(int64_t seq) const { return find(seq, "sequence_length").length; }

std::vector<int64_t> KVCacheNode::sequences() const {
  std::vector<int64_t> out;
  for (const auto& [id, s] : sequences_) out.push_back(id);
  return out;
}

void KVCacheNode::begin_step(const std::vector<int64_t>& seqs, const std::vector<int64_t>& counts) {
  if (seqs.size() != counts.size()) {
    LOOM_THROW(Error) << "KV cache: begin_step: " << seqs.size() << " sequences but " << counts.size() << " counts";
  }
  if (seqs.empty()) LOOM_THROW(Error) << "KV cache: begin_step: no sequence";
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Sequence& s = find(seqs[i], "begin_step");
    if (std::count(seqs.begin(), seqs.end(), seqs[i]) > 1) {
      LOOM_THROW(Error) << "KV cache: begin_step: sequence " << seqs[i] << " is named twice";
    }
    if (counts[i] < 1) {
      LOOM_THROW(Error) << "KV cache: begin_step: sequence " << seqs[i] << " gets " << counts[i]
                        << " tokens; at least 1";
    }
    if (counts[i] > capacity_ - s.length) {
      LOOM_THROW(Error) << "KV cache: sequence " << seqs[i] << " would hold " << s.length + counts[i]
                        << " tokens; its capacity is " << capacity_;
    }
  }
  step_seqs_ = seqs;
  step_counts_ = counts;
  in_step_ = true;
}

void KVCacheNode::end_step() {
  if (!in_step_) LOOM_THROW(Error) << "KV cache: end_step without begin_step";
  for (size_t i = 0; i < step_seqs_.size(); ++i) sequences_.at(step_seqs_[i]).length += step_counts_[i];
  in_step_ = false;
  step_seqs_.clear();
  step_counts_.clear();
}

std::string KVCacheNode::step_text() const {
  std::ostringstream out;
  for (size_t i = 0; i < step_seqs_.size(); ++i) out << (i ? ", " : "") << step_seqs_[i] << ": " << step_counts_[i];
  return out.str();
}

NDArray KVCacheNode::attention(int64_t layer, const NDArray& q, const NDArray& k, const NDArray& v, double scale) {
  if (!in_step_) LOOM_THROW(Error) << "KV cache: attention outside a step; call begin_step first";
  if (layer < 0 || layer >= layers_) {
    LOOM_THROW(Error) << "KV cache: attention: layer " << layer << " is out of range (the cache has " << layers_
                      << " layers)";
  }
  int64_t tokens = 0;
  for (int64_t c : step_counts_) tokens += c;
  const char* names[] = {"q", "k", "v"};
  const NDArray* arrays[] = {&q, &k, &v};
  for (int a = 0; a < 3; ++a) {
    const NDArray& x = *arrays[a];
    if (!x.defined()) LOOM_THROW(Error) << "KV cache: attention: " << names[a] << " is none";
    std::vector<int64_t> shape = x.shape_vector();
    if (x->dtype != DataType::Float(32) || shape.size() != 3 || !is_compact(x->dl_tensor()) ||
        x->device.device_type != kDLCPU) {
      LOOM_THROW(Error) << "KV cache: attention: " << names[a] << " must be a compact float32 host tensor (tokens, "
                        << (a ? "kv_heads" : "heads") << ", head_dim); got " << x->dtype.to_string() << " of shape "
                        << shape_text(shape);
    }
    if (shape[0] != tokens) {
      LOOM_THROW(Error) << "KV cache: attention: the step has " << tokens << " tokens (sequences " << step_text()
                        << "); " << names[a] << " has " << shape[0] << " rows";
    }
    const bool heads_ok = a ? shape[1] == kv_heads_ : shape[1] > 0 && shape[1] % kv_heads_ == 0;
    if (!heads_ok || shape[2] != head_dim_) {
      LOOM_THROW(Error) << "KV cache: attention: " << names[a] << " has shape " << shape_text(shape) << "; expected ("
                        << tokens << ", "
                        << (a ? std::to_string(kv_heads_) : "a multiple of " + std::to_string(kv_heads_)) << ", "
                        << head_dim_ << ")";
    }
  }
  const int64_t heads = q.shape_vector()[1], group = heads / kv_heads_, d = head_dim_;

  // Where each token of the step goes: its sequence and position.
  std::vector<Sequence*> token_seq(static_cast<size_t>(tokens));
  std::vector<int64_t> token_pos(static_cast<size_t>(tokens));
  for (size_t i = 0, t = 0; i < step_seqs_.size(); ++i) {
    Sequence& s = sequences_.at(step_seqs_[i]);
    for (int64_t c = 0; c < step_counts_[i]; ++c, ++t) {
      token_seq[t] = &s;
      token_pos[t] = s.length + c;
    }
  }
  const float* kd = k.data_as<float>();
  const float* vd = v.data_as<float>();
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < kv_heads_; ++h) {
      std::memcpy(block(*token_seq[t], layer, false, h) + token_pos[t] * d, kd + (t * kv_heads_ + h) * d,
                  static_cast<size_t>(d) * sizeof(float));
      std::memcpy(block(*token_seq[t], layer, true, h) + token_pos[t] * d, vd + (t * kv_heads_ + h) * d,
                  static_cast<size_t>(d) * sizeof(float));
    }

  NDArray out = NDArray::empty({tokens, heads, d}, DataType::Float(32));
  const float* qd = q.data_as<float>();
  float* od = out.data_as<float>();
  const auto fscale = static_cast<float>(scale);
  ThreadPool::global().parallel_for(0, tokens * kv_heads_, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task / kv_heads_, g = task % kv_heads_, count = token_pos[t] + 1;
      scores.resize(static_cast<size_t>(count * group));
      const float* keys = block(*token_seq[t], layer, false, g);
      const float* values = block(*token_seq[t], layer, true, g);
      const int64_t row = (t * heads + g * group) * d;
      attend_group(qd + row, keys, values, count, d, group, fscale, scores.data(), od + row);
    }
  });
  return out;
}

NDArray KVCacheNode::read(int64_t seq, int64_t layer, bool values) const {
  const Sequence& s = find(seq, "read");
  if (layer < 0 || layer >= layers_) {
    LOOM_THROW(Error) << "KV cache: read: layer " << layer << " is out of range (the cache has " << layers_
                      << " layers)";
  }
  NDArray out = NDArray::empty({kv_heads_, s.length, head_dim_}, DataType::Float(32));
  for (int64_t h = 0; h < kv_heads_; ++h) {
    std::memcpy(out.data_as<float>() + h * s.length * head_dim_, block(const_cast<Sequence&>(s), layer, values, h),
                static_cast<size_t>(s.length * head_dim_) * sizeof(float));
  }
  return out;
}

namespace {
// A list of ints: an Array, or a 1-D int64 or int32 host tensor (what C
// callers pass).
std::vector<int64_t> int_list(const Any& a, const char* what) {
  std::vector<int64_t> out;
  if (const auto* t = a.kind() == AnyKind::kObject ? dynamic_cast<const NDArrayNode*>(a.object()) : nullptr) {
    NDArray arr(ObjectPtr<Object>(const_cast<NDArrayNode*>(t)));
    std::vector<int64_t> shape = arr.shape_vector();
    bool ints = t->dtype == DataType::Int(64) || t->dtype == DataType::Int(32);
    if (shape.size() != 1 || !ints || t->device.device_type != kDLCPU || !is_compact(t->dl_tensor())) {
      LOOM_THROW(TypeError) << "KV cache: " << what << " must be a list of ints or a 1-D int64 host tensor, got "
                            << t->dtype.to_string() << " of shape " << shape_text(shape);
    }
    for (int64_t k = 0; k < shape[0]; ++k)
      out.push_back(t->dtype == DataType::Int(64) ? arr.data_as<int64_t>()[k] : arr.data_as<int32_t>()[k]);
    return out;
  }
  if (a.kind() != AnyKind::kObject || !a.as_object_ref().as<ArrayNode>()) {
    LOOM_THROW(TypeError) << "KV cache: " << what << " must be a list of ints or a 1-D int64 host tensor, got "
                          << a.describe();
  }
  for (const Any& x : a.as_object_ref().as<ArrayNode>()->items) {
    if (x.kind() != AnyKind::kInt) LOOM_THROW(TypeError) << "KV cache: " << what << " must be a list of ints";
    out.push_back(x.as_int());
  }
  return out;
}

KVCacheNode* cache_of(const ObjectRef& cache) {
  auto* node = const_cast<KVCacheNode*>(cache.as<KVCacheNode>());
  if (!node) {
    LOOM_THROW(TypeError) << "KV cache: expected a runtime.KVCache, got "
                          << (cache.defined() ? cache->type_key() : std::string("none"));
  }
  return node;
}

void add(const std::string& name, Function f, const std::string& doc) {
  FunctionRegistry::register_function("runtime.kv_cache." + name, std::move(f), doc);
}

const bool registered = [] {
  add("create",
      Function::typed(
          [](int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity, int64_t max_sequences) {
            return ObjectRef(make_object<KVCacheNode>(layers, kv_heads, head_dim, capacity, max_sequences));
          },
          "runtime.kv_cache.create"),
      "create(layers, kv_heads, head_dim, capacity, max_sequences): an empty float32 KV cache");
  add("add_sequence", Function::typed([](ObjectRef c, int64_t seq) { cache_of(c)->add_sequence(seq); }),
      "add_sequence(cache, seq): a new, empty sequence");
  add("remove_sequence", Function::typed([](ObjectRef c, int64_t seq) { cache_of(c)->remove_sequence(seq); }),
      "remove_sequence(cache, seq)");
  add("fork_sequence", Function::typed([](ObjectRef c, int64_t parent, int64_t child, int64_t length) {
        cache_of(c)->fork_sequence(parent, child, length);
      }),
      "fork_sequence(cache, parent, child, length): child starts as parent's first length tokens (-1: all)");
  add("pop_tokens", Function::typed([](ObjectRef c, int64_t seq, int64_t n) { cache_of(c)->pop_tokens(seq, n); }),
      "pop_tokens(cache, seq, n): drops the last n tokens");
  add("sequence_length", Function::typed([](ObjectRef c, int64_t seq) { return cache_of(c)->sequence_length(seq); }),
      "sequence_length(cache, seq): the tokens held");
  add("sequences", Function::typed([](ObjectRef c) {
        std::vector<Any> out;
        for (int64_t s : cache_of(c)->sequences()) out.emplace_back(s);
        return Array(std::move(out));
      }),
      "sequences(cache): the ids held, ascending");
  add("info", Function::typed([](ObjectRef c) {
        const KVCacheNode* n = cache_of(c);
        return Array(
            {Any(n->layers()), Any(n->kv_heads()), Any(n->head_dim()), Any(n->capacity()), Any(n->max_sequences())});
      }),
      "info(cache): [layers, kv_heads, head_dim, capacity, max_sequences]");
  add("begin_step", Function::typed([](ObjectRef c, Any seqs, Any counts) {
        cache_of(c)->begin_step(int_list(seqs, "begin_step's sequences"), int_list(counts, "begin_step's counts"));
      }),
      "begin_step(cache, seqs, counts): the next calls' flat batch, counts[i] new tokens of seqs[i]");
  add("end_step", Function::typed([](ObjectRef c) { cache_of(c)->end_step(); }),
      "end_step(cache): commits the step's lengths");
  add("attention", Function::typed([](ObjectRef c, Any layer, NDArray q, NDArray k, NDArray v, Any scale) {
        double l = scalar_value(layer, "KV cache: attention: the layer");
        if (l != std::floor(l)) LOOM_THROW(TypeError) << "KV cache: attention: the layer must be whole, got " << l;
        return cache_of(c)->attention(static_cast<int64_t>(l), q, k, v,
                                      scalar_value(scale, "KV cache: attention: the scale"));
      }),
      "attention(cache, layer, q, k, v, scale): writes the step's k, v (tokens, kv_heads, head_dim) and returns "
      "causal grouped-query attention of q (tokens, heads, head_dim) over each sequence's cache");
  add("read", Function::typed([](ObjectRef c, int64_t seq, int64_t layer, bool values) {
        return cache_of(c)->read(seq, layer, values);
      }),
      "read(cache, seq, layer, values): a copy of the keys (or values) held, (kv_heads, length, head_dim)");
  return true;
}();
}  // namespace

}  // namespace loom::runtime
