// The KV cache of decoder LLMs (docs/llm.md, "The KV cache").
//
// A runtime object holding the keys and values of every layer for several
// sequences, contiguous per sequence with a fixed capacity: per sequence and
// layer, one float32 block [kv_heads, capacity, head_dim] of keys and one of
// values.  Graph functions reach it through the registry function
// runtime.kv_cache.attention (one call_packed per layer), which writes the
// step's keys and values and computes causal, grouped-query attention over
// each sequence's cache.  A step is a flat batch: begin_step names the
// sequences and their new token counts, the model's calls run, end_step
// commits the lengths.  Every refusal (a full sequence, an unknown id, a
// shape that is not the cache's) is an Error raised before anything is
// written.
#ifndef LOOM_RUNTIME_KV_CACHE_H_
#define LOOM_RUNTIME_KV_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/object/object.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

class KVCacheNode : public Object {
 public:
  KVCacheNode(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity, int64_t max_sequences);

  int64_t layers() const { return layers_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t capacity() const { return capacity_; }
  int64_t max_sequences() const { return max_sequences_; }

  void add_sequence(int64_t seq);
  void remove_sequence(int64_t seq);
  // `child` starts as the first `length` tokens of `parent` (-1: all).
  void fork_sequence(int64_t parent, int64_t child, int64_t length);
  void pop_tokens(int64_t seq, int64_t count);
  int64_t sequence_length(int64_t seq) const;
  std::vector<int64_t> sequences() const;

  // The next attention calls' flat batch: counts[i] new tokens of seqs[i].
  void begin_step(const std::vector<int64_t>& seqs, const std::vector<int64_t>& counts);
  void end_step();

  // Writes the step's keys and values of `layer` and returns the attention
  // of q (n, heads, head_dim) over each sequence's cache.
  NDArray attention(int64_t layer, const NDArray& q, const NDArray& k, const NDArray& v, double scale);

  // The keys or values a sequence holds in a layer, (kv_heads, length, head_dim): a copy.
  NDArray read(int64_t seq, int64_t layer, bool values) const;

  LOOM_OBJECT(KVCacheNode, Object, "runtime.KVCache");

 private:
  struct Sequence {
    int64_t length = 0;
    std::vector<float> data;  // [layers][2][kv_heads][capacity][head_dim]
  };
  Sequence& find(int64_t seq, const char* what);
  const Sequence& find(int64_t seq, const char* what) const;
  float* block(Sequence& s, int64_t layer, bool values, int64_t head) const;
  std::string step_text() const;

  int64_t layers_, kv_heads_, head_dim_, capacity_, max_sequences_;
  std::map<int64_t, Sequence> sequences_;
  std::vector<int64_t> step_seqs_, step_counts_;
  bool in_step_ = false;
};

class KVCache : public ObjectRef {
 public:
  LOOM_OBJECT_REF(KVCache, ObjectRef, KVCacheNode)
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_KV_CACHE_H_
