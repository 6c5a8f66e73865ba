// AutoSchedule's elementwise rule: a nest's innermost loop split by the
// vector width and vectorized (unrolled a few vectors deep) where its store
// and loads are contiguous; the one-store loops of a reduction nest
// likewise; and an elementwise producer computed per iteration of its
// consumer's outer loop (localize) where that computes nothing twice.
#include "auto_schedule_rules.h"

namespace loom::loop::auto_schedule {

// The elementwise nest `producer` computed per iteration of the
// already scheduled nest `consumer`'s outer loop (compute_at), when every
// iteration reads a part of its buffer no other iteration reads, so that
// nothing is computed twice: a depthwise convolution reads one channel
// of its padded input per iteration, which is then written and read
// while it is in cache instead of in a pass over the whole input (a
// stride-2 depthwise 3x3 over 96x112x112 copied 5 MB before reading
// it).  Its inner loop is vectorized.  False (schedule unchanged) when
// it does not fit.
bool StageScheduler::localize(const std::string& producer, const std::string& consumer) {
  auto work = work_of(find(s_, producer));
  if (!work) return false;
  Schedule saved = s_;
  try {
    s_.compute_at(producer, consumer);
    const auto* body = find(s_, consumer)->body.as<SeqStmtNode>();
    const auto* moved = body ? body->seq[0].cast<Stmt>().as<ForNode>() : nullptr;
    auto part = moved ? work_of(moved) : std::nullopt;
    auto extent = const_int(find(s_, consumer)->extent);
    if (part && extent && *part * *extent <= *work) {
      vectorize_inner(moved->loop_var->name);
      return true;
    }
  } catch (const ScheduleError&) {
  }
  s_ = saved;
  return false;
}

// Returns the nest's root afterwards (the split's outer loop when the
// root itself was split).
std::string StageScheduler::vectorize_inner(const std::string& root) {
  std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
  const ForNode* inner = chain.back();
  if (has_loop(inner->body)) return root;
  int lanes = lanes_for(inner->body);
  auto extent = const_int(inner->extent);
  if (lanes < 2 || !extent || *extent < lanes) return root;
  // One store, or a sequence of stores (an operator that writes several
  // outputs from the values it reads once: winograd_input), each
  // contiguous along the loop; a sequence reads no buffer it writes (a
  // value one statement writes and a later one reads at another index
  // would be read a vector early).
  std::vector<const BufferStoreNode*> stores;
  if (const auto* seq = inner->body.as<SeqStmtNode>()) {
    for (const Any& st : seq->seq) stores.push_back(st.cast<Stmt>().as<BufferStoreNode>());
  } else {
    stores.push_back(inner->body.as<BufferStoreNode>());
  }
  std::set<const Object*> written;
  for (const BufferStoreNode* store : stores) {
    if (!store || !contiguous_along(store, inner->loop_var.get()) ||
        !uses_var(Any(store->indices), inner->loop_var.get())) {
      return root;
    }
    written.insert(store->buffer->data.get());
  }
  if (stores.size() > 1) {
    bool reads_written = false;
    Visitor v;
    v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      reads_written = reads_written || written.count(l->buffer->data.get());
      v.visit_children(l);
    });
    v.visit(Any(inner->body));
    if (reads_written) return root;
  }
  if (!strided_loads(inner->body, inner->loop_var.get()).empty()) return root;
  std::string name = inner->loop_var->name;
  std::vector<int64_t> unrolls{1};
  for (int64_t u : {2, 4})
    if (*extent >= u * lanes) unrolls.push_back(u);
  int64_t unroll = decider_.choose("elementwise.unroll", unrolls, 1);
  auto [outer, vec] = s_.split(name, lanes * unroll);
  if (unroll > 1) {
    auto [vo, vi] = s_.split(vec, lanes);
    s_.unroll(vo);
    s_.vectorize(vi);
  } else {
    s_.vectorize(vec);
  }
  return name == root ? outer : root;
}

// The other one-store loops of a nest that is not one perfect nest (a
// row's steps: normalise after the sums), vectorized where their stores
// and loads are contiguous.
void StageScheduler::vectorize_leaves(const std::string& root) {
  for (const std::string& name : leaves(root, false)) {
    if (name != root) vectorize_inner(name);
  }
}

}  // namespace loom::loop::auto_schedule
