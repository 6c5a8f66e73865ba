#include "loom/tir/stmt.h"

#include "loom/support/strings.h"

namespace loom::tir {

LOOM_REGISTER_OBJECT(ForNode);
LOOM_REGISTER_OBJECT(BufferStoreNode);
LOOM_REGISTER_OBJECT(AllocateNode);
LOOM_REGISTER_OBJECT(LetStmtNode);
LOOM_REGISTER_OBJECT(IfThenElseNode);
LOOM_REGISTER_OBJECT(SeqStmtNode);
LOOM_REGISTER_OBJECT(EvaluateNode);
LOOM_REGISTER_OBJECT(AttrStmtNode);

namespace {
const std::vector<std::string> kForKindNames = {"serial", "parallel", "vectorized", "unrolled", "thread_binding"};
}

const char* for_kind_name(ForKind kind) {
  auto index = static_cast<size_t>(kind);
  return index < kForKindNames.size() ? kForKindNames[index].c_str() : "?";
}

ForKind parse_for_kind(const std::string& text) {
  for (size_t i = 0; i < kForKindNames.size(); ++i)
    if (kForKindNames[i] == text) return static_cast<ForKind>(i);
  LOOM_THROW(Error) << "unknown loop kind '" << text << "'" << did_you_mean(text, kForKindNames)
                    << " (kinds: " << join(kForKindNames, ", ") << ")";
}

For::For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body, std::string thread, Map annotations) {
  if ((kind == ForKind::kThreadBinding) != !thread.empty()) {
    LOOM_THROW(Error) << "tir.For: a thread axis is given exactly for thread_binding loops (kind "
                      << for_kind_name(kind) << ", thread '" << thread << "')";
  }
  auto node = make_object<ForNode>();
  node->loop_var = std::move(loop_var);
  node->min = std::move(min);
  node->extent = std::move(extent);
  node->kind = static_cast<int64_t>(kind);
  node->thread = std::move(thread);
  node->body = std::move(body);
  node->annotations = std::move(annotations);
  data_ = node;
}

BufferStore::BufferStore(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices) {
  auto node = make_object<BufferStoreNode>();
  node->buffer = std::move(buffer);
  node->value = std::move(value);
  node->indices = ir::to_array(indices);
  data_ = node;
}

Allocate::Allocate(Buffer buffer, Stmt body) {
  auto node = make_object<AllocateNode>();
  node->buffer = std::move(buffer);
  node->body = std::move(body);
  data_ = node;
}

LetStmt::LetStmt(Var var, PrimExpr value, Stmt body) {
  auto node = make_object<LetStmtNode>();
  node->var = std::move(var);
  node->value = std::move(value);
  node->body = std::move(body);
  data_ = node;
}

IfThenElse::IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case) {
  auto node = make_object<IfThenElseNode>();
  node->condition = std::move(condition);
  node->then_case = std::move(then_case);
  node->else_case = std::move(else_case);
  data_ = node;
}

SeqStmt::SeqStmt(std::vector<Stmt> seq) {
  auto node = make_object<SeqStmtNode>();
  node->seq = ir::to_array(seq);
  data_ = node;
}

Evaluate::Evaluate(PrimExpr value) {
  auto node = make_object<EvaluateNode>();
  node->value = std::move(value);
  data_ = node;
}

AttrStmt::AttrStmt(std::string key, PrimExpr value, Stmt body) {
  auto node = make_object<AttrStmtNode>();
  node->key = std::move(key);
  node->value = std::move(value);
  node->body = std::move(body);
  data_ = node;
}

}  // namespace loom::tir
