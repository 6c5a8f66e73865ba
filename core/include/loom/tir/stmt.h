// Statements of the prim IR (see docs/ir.md, "Prim IR").
#ifndef LOOM_TIR_STMT_H_
#define LOOM_TIR_STMT_H_

#include <string>
#include <vector>

#include "loom/tir/expr.h"

namespace loom::tir {

class StmtNode : public Object {
 public:
  LOOM_ABSTRACT_OBJECT(StmtNode, Object, "tir.Stmt");
};
class Stmt : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Stmt, ObjectRef, StmtNode)
};

enum class ForKind : int64_t { kSerial = 0, kParallel = 1, kVectorized = 2, kUnrolled = 3, kThreadBinding = 4 };
const char* for_kind_name(ForKind kind);
// Throws Error naming the text and the valid kinds.
ForKind parse_for_kind(const std::string& text);

// for loop_var in [min, min + extent): body.  `thread` names the thread axis
// ("threadIdx.x", ...) for kThreadBinding and is empty otherwise.
class ForNode : public StmtNode {
 public:
  Var loop_var;
  PrimExpr min, extent;
  int64_t kind = 0;  // a ForKind
  std::string thread;
  Stmt body;
  Map annotations;
  ForKind for_kind() const { return static_cast<ForKind>(kind); }
  LOOM_OBJECT(ForNode, StmtNode, "tir.For");
  static void reflect(ReflectionBuilder<ForNode>& r) {
    r.field("loop_var", &ForNode::loop_var)
        .field("min", &ForNode::min)
        .field("extent", &ForNode::extent)
        .field("kind", &ForNode::kind, "0 serial, 1 parallel, 2 vectorized, 3 unrolled, 4 thread binding")
        .field("thread", &ForNode::thread)
        .field("body", &ForNode::body)
        .field("annotations", &ForNode::annotations);
  }
};
class For : public Stmt {
 public:
  LOOM_OBJECT_REF(For, Stmt, ForNode)
  For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body, std::string thread = "",
      Map annotations = Map::empty());
};

class BufferStoreNode : public StmtNode {
 public:
  Buffer buffer;
  PrimExpr value;
  Array indices;
  LOOM_OBJECT(BufferStoreNode, StmtNode, "tir.BufferStore");
  static void reflect(ReflectionBuilder<BufferStoreNode>& r) {
    r.field("buffer", &BufferStoreNode::buffer)
        .field("value", &BufferStoreNode::value)
        .field("indices", &BufferStoreNode::indices)
        .elements<PrimExpr>();
  }
};
class BufferStore : public Stmt {
 public:
  LOOM_OBJECT_REF(BufferStore, Stmt, BufferStoreNode)
  BufferStore(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices);
};

// Allocates `buffer` (in its scope) for the duration of `body`.
class AllocateNode : public StmtNode {
 public:
  Buffer buffer;
  Stmt body;
  LOOM_OBJECT(AllocateNode, StmtNode, "tir.Allocate");
  static void reflect(ReflectionBuilder<AllocateNode>& r) {
    r.field("buffer", &AllocateNode::buffer).field("body", &AllocateNode::body);
  }
};
class Allocate : public Stmt {
 public:
  LOOM_OBJECT_REF(Allocate, Stmt, AllocateNode)
  Allocate(Buffer buffer, Stmt body);
};

class LetStmtNode : public StmtNode {
 public:
  Var var;
  PrimExpr value;
  Stmt body;
  LOOM_OBJECT(LetStmtNode, StmtNode, "tir.LetStmt");
  static void reflect(ReflectionBuilder<LetStmtNode>& r) {
    r.field("var", &LetStmtNode::var).field("value", &LetStmtNode::value).field("body", &LetStmtNode::body);
  }
};
class LetStmt : public Stmt {
 public:
  LOOM_OBJECT_REF(LetStmt, Stmt, LetStmtNode)
  LetStmt(Var var, PrimExpr value, Stmt body);
};

class IfThenElseNode : public StmtNode {
 public:
  PrimExpr condition;
  Stmt then_case, else_case;  // else_case may be undefined
  LOOM_OBJECT(IfThenElseNode, StmtNode, "tir.IfThenElse");
  static void reflect(ReflectionBuilder<IfThenElseNode>& r) {
    r.field("condition", &IfThenElseNode::condition)
        .field("then_case", &IfThenElseNode::then_case)
        .field("else_case", &IfThenElseNode::else_case, "may be none", kOptional);
  }
};
class IfThenElse : public Stmt {
 public:
  LOOM_OBJECT_REF(IfThenElse, Stmt, IfThenElseNode)
  IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case = Stmt());
};

class SeqStmtNode : public StmtNode {
 public:
  Array seq;  // of Stmt
  LOOM_OBJECT(SeqStmtNode, StmtNode, "tir.SeqStmt");
  static void reflect(ReflectionBuilder<SeqStmtNode>& r) { r.field("seq", &SeqStmtNode::seq).elements<Stmt>(); }
};
class SeqStmt : public Stmt {
 public:
  LOOM_OBJECT_REF(SeqStmt, Stmt, SeqStmtNode)
  explicit SeqStmt(std::vector<Stmt> seq);
};

class EvaluateNode : public StmtNode {
 public:
  PrimExpr value;
  LOOM_OBJECT(EvaluateNode, StmtNode, "tir.Evaluate");
  static void reflect(ReflectionBuilder<EvaluateNode>& r) { r.field("value", &EvaluateNode::value); }
};
class Evaluate : public Stmt {
 public:
  LOOM_OBJECT_REF(Evaluate, Stmt, EvaluateNode)
  explicit Evaluate(PrimExpr value);
};

// An annotation on a region: `key` = `value` holds within `body`
// ("pragma_unroll", "storage_alignment", ...).
class AttrStmtNode : public StmtNode {
 public:
  std::string key;
  PrimExpr value;
  Stmt body;
  LOOM_OBJECT(AttrStmtNode, StmtNode, "tir.AttrStmt");
  static void reflect(ReflectionBuilder<AttrStmtNode>& r) {
    r.field("key", &AttrStmtNode::key).field("value", &AttrStmtNode::value).field("body", &AttrStmtNode::body);
  }
};
class AttrStmt : public Stmt {
 public:
  LOOM_OBJECT_REF(AttrStmt, Stmt, AttrStmtNode)
  AttrStmt(std::string key, PrimExpr value, Stmt body);
};

}  // namespace loom::tir

#endif  // LOOM_TIR_STMT_H_
