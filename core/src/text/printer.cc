// The printer of the IR text format (docs/ir-text-format.md).
//
// Invariants the parser relies on: every variable and buffer name printed
// in a function is unique within it; a variable or buffer not bound by a
// parameter, loop, let or alloc is declared with its type at its first use
// (in textual order, hence cat() below); scalar
// parameters of a prim function are named before any parameter is printed
// (so buffer shapes can refer to them); anything without syntax is a
// meta[N] reference into the trailing JSON section.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/graph/shared.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/object/structural.h"
#include "loom/support/json.h"
#include "loom/support/size.h"
#include "loom/support/stack.h"
#include "loom/support/strings.h"
#include "loom/tir/function.h"

namespace loom::text {

namespace {

using namespace loom::ir;   // NOLINT: types, functions, the module
using namespace loom::tir;  // NOLINT: the prim IR's node names read best unqualified here

int binary_precedence(const Object* op, const char** symbol) {
  struct Entry {
    uint32_t index;
    const char* symbol;
    int precedence;
  };
  static const std::vector<Entry> table = {
      {OrNode::runtime_type_index(), "||", 1},       {AndNode::runtime_type_index(), "&&", 2},
      {EQNode::runtime_type_index(), "==", 3},       {NENode::runtime_type_index(), "!=", 3},
      {LTNode::runtime_type_index(), "<", 3},        {LENode::runtime_type_index(), "<=", 3},
      {GTNode::runtime_type_index(), ">", 3},        {GENode::runtime_type_index(), ">=", 3},
      {AddNode::runtime_type_index(), "+", 4},       {SubNode::runtime_type_index(), "-", 4},
      {MulNode::runtime_type_index(), "*", 5},       {DivNode::runtime_type_index(), "/", 5},
      {FloorDivNode::runtime_type_index(), "//", 5}, {FloorModNode::runtime_type_index(), "%", 5},
  };
  for (const auto& e : table) {
    if (e.index == op->type_index()) {
      *symbol = e.symbol;
      return e.precedence;
    }
  }
  return 0;  // Min and Max print as calls
}

// Local names are letters, digits and '_' ('.' would read as a tuple index).
std::string sanitize(const std::string& hint, const char* fallback) {
  std::string out;
  for (char c : hint)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
  return out.empty() ? fallback : out;
}

std::string global_name(const std::string& name) {
  bool plain = !name.empty();
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) plain = false;
  return "@" + (plain ? name : json_quote(name));
}

// Concatenation in argument order: a braced list is evaluated left to right,
// which the printer needs (free variables are declared at their first
// printed use, and that must be their first use in the text).
std::string cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

class Printer {
 public:
  explicit Printer(bool with_meta, uint64_t elide_bytes = UINT64_MAX, BlobSink sink = nullptr)
      : with_meta_(with_meta), elide_bytes_(elide_bytes), sink_(std::move(sink)) {}

  std::string module(const IRModule& mod) {
    const IRModuleNode* m = mod.get();
    if (m->attrs.size()) out_ << "module attrs " << value(m->attrs) << "\n";
    if (m->global_infos.size()) out_ << "module global_infos " << value(m->global_infos) << "\n";
    bool first = !(m->attrs.size() || m->global_infos.size());
    for (const auto& item : m->functions->items) {
      if (!first) out_ << "\n";
      first = false;
      reset_scope();
      out_ << global_name(item.first) << " = ";
      function(item.second.object());
      out_ << "\n";
    }
    finish_meta();
    return out_.str();
  }

  std::string standalone(const Any& v) {
    const Object* o = v.object();
    if (!o || v.kind() != AnyKind::kObject) {
      out_ << value(v);
    } else if (o->is_instance<BaseFuncNode>()) {
      function(o);
    } else if (o->is_instance<IRModuleNode>()) {
      return module(v.cast<IRModule>());
    } else if (o->is_instance<StmtNode>()) {
      stmt(v.cast<Stmt>());
    } else if (o->is_instance<PrimExprNode>()) {
      out_ << prim(v.cast<PrimExpr>());
    } else if (o->is_instance<ExprNode>()) {
      graph_body(shared_body(v.cast<Expr>()));
    } else if (o->is_instance<TypeNode>()) {
      out_ << type(v.cast<Type>());
    } else if (o->is_instance<BufferNode>()) {
      out_ << buffer_decl(v.cast<Buffer>());
    } else {
      out_ << value(v);
    }
    std::string text = out_.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

 private:
  // ---- names --------------------------------------------------------------
  void reset_scope() {
    names_.clear();
    used_.clear();
    next_suffix_.clear();
  }

  // The hint, or hint_K with the smallest unused K (the next K to try is
  // remembered per hint, so a thousand loops named i cost linear time).
  std::string fresh_name(const std::string& hint, const char* fallback) {
    std::string base = sanitize(hint, fallback);
    std::string name = base;
    if (used_.count(name)) {
      int& k = next_suffix_[base];
      do {
        name = base + "_" + std::to_string(++k);
      } while (used_.count(name));
    }
    used_.insert(name);
    return name;
  }

  const std::string* known_name(const Object* o) const {
    auto found = names_.find(o);
    return found == names_.end() ? nullptr : &found->second;
  }

  // Declares a binding (param, loop var, let var): "%name".
  std::string declare(const Object* o, const std::string& hint, const char* fallback) {
    std::string name = fresh_name(hint, fallback);
    names_[o] = name;
    return "%" + name;
  }

  // ---- meta ----------------------------------------------------------------
  std::string meta_ref(const Any& v) {
    const Object* o = v.object();
    auto found = meta_index_.find(o);
    size_t index;
    if (found != meta_index_.end()) {
      index = found->second;
    } else {
      index = meta_.size();
      meta_.push_back(v);
      meta_index_[o] = index;
    }
    return "meta[" + std::to_string(index) + "]";
  }

  void finish_meta() {
    if (!with_meta_ || meta_.empty()) return;
    // Large constants (an imported model's weights) may be shown by a
    // description instead of their bytes; the text then says so and does
    // not parse back.
    std::vector<Any> shown = meta_;
    uint64_t elided = 0, elided_bytes = 0;
    for (Any& item : shown) {
      const auto* a = item.as_object_ref().as<runtime::NDArrayNode>();
      if (!a || a->nbytes() <= elide_bytes_) continue;
      std::string shape;
      for (const Any& d : a->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d.as_int());
      item = Any("elided: a " + a->dtype.to_string() + " constant of shape (" + shape + "), " +
                 readable_bytes(a->nbytes()));
      ++elided;
      elided_bytes += a->nbytes();
    }
    if (elided) {
      out_ << "\n# " << elided << " constant" << (elided == 1 ? "" : "s") << " (" << readable_bytes(elided_bytes)
           << ") elided; print with show_meta=True to include them (only then does the text parse back)";
    }
    out_ << "\nmeta " << save_json(Array(shown), sink_) << "\n";
  }

  // ---- values and types ----------------------------------------------------
  // The recursive producers append to a string (so a deep expression
  // prints in linear time) and take one more level of stack per level of
  // nesting (loom/support/stack.h).  value(), type(), prim() and graph()
  // return the text of one node.
  std::string value(const Any& v) {
    std::string o;
    value_to(o, v);
    return o;
  }
  void value_to(std::string& o, const Any& v) {
    with_stack([&] { value_here(o, v); });
  }
  void value_here(std::string& o, const Any& v) {
    switch (v.kind()) {
      case AnyKind::kNone:
        o += "none";
        return;
      case AnyKind::kBool:
        o += v.as_bool() ? "true" : "false";
        return;
      case AnyKind::kInt:
        o += std::to_string(v.as_int());
        return;
      case AnyKind::kFloat: {
        double d = v.as_float();
        o += std::isfinite(d) ? format_double(d) : "float(" + json_quote(format_double(d)) + ")";
        return;
      }
      case AnyKind::kStr:
        o += json_quote(v.as_string());
        return;
      case AnyKind::kDataType:
        o += v.as_dtype().to_string();
        return;
      case AnyKind::kDevice:
        o += "device(" + json_quote(v.as_device().to_string()) + ")";
        return;
      case AnyKind::kFunction:
      case AnyKind::kOpaquePtr:
        o += meta_ref(v);
        return;  // cannot be saved; the meta section will say so
      case AnyKind::kObject:
        break;
    }
    const Object* obj = v.object();
    if (obj->is_instance<ArrayNode>()) {
      o += "[";
      const auto& items = static_cast<const ArrayNode*>(obj)->items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) o += ", ";
        value_to(o, items[i]);
      }
      o += "]";
      return;
    }
    if (obj->is_instance<MapNode>()) {
      o += "{";
      bool first = true;
      for (const auto& item : static_cast<const MapNode*>(obj)->items) {
        if (!first) o += ", ";
        o += is_identifier(item.first) ? item.first : json_quote(item.first);
        o += ": ";
        value_to(o, item.second);
        first = false;
      }
      o += "}";
      return;
    }
    if (obj->is_instance<PrimTypeNode>()) {
      o += "Prim[" + static_cast<const PrimTypeNode*>(obj)->dtype.to_string() + "]";
      return;
    }
    if (obj->is_instance<TypeNode>()) return type_to(o, v.cast<Type>());
    if (obj->is_instance<PrimExprNode>()) return prim_to(o, v.cast<PrimExpr>());  // a dimension: %n * 4
    o += meta_ref(v);
  }

  std::string type(const Type& t) {
    std::string o;
    type_to(o, t);
    return o;
  }
  void type_to(std::string& o, const Type& t) {
    with_stack([&] { type_here(o, t); });
  }
  void type_here(std::string& o, const Type& t) {
    if (!t.defined()) {
      o += "none";
    } else if (const auto* p = t.as<PrimTypeNode>()) {
      o += p->dtype.to_string();
    } else if (const auto* p = t.as<TensorTypeNode>()) {
      o += "Tensor[";
      if (p->shape.defined()) {
        o += "(";
        for (size_t i = 0; i < p->shape.size(); ++i) {
          if (i) o += ", ";
          prim_to(o, p->shape[i].cast<PrimExpr>());
        }
        o += ")";
      } else {
        o += "?";
      }
      o += ", " + p->dtype.to_string() + "]";
    } else if (const auto* p = t.as<TupleTypeNode>()) {
      o += "(";
      for (size_t i = 0; i < p->fields.size(); ++i) {
        if (i) o += ", ";
        type_to(o, p->fields[i].cast<Type>());
      }
      o += p->fields.size() == 1 ? ",)" : ")";
    } else if (const auto* p = t.as<FuncTypeNode>()) {
      o += "fn(";
      for (size_t i = 0; i < p->params.size(); ++i) {
        if (i) o += ", ";
        type_to(o, p->params[i].cast<Type>());
      }
      o += ") -> ";
      type_to(o, p->ret);
    } else if (const auto* p = t.as<OpaqueTypeNode>()) {
      o += "Opaque[" + json_quote(p->name) + "]";
    } else {
      o += meta_ref(Any(ObjectRef(t.object_ptr())));
    }
  }

  // ---- prim expressions ----------------------------------------------------
  std::string var_ref(const VarNode* v) {
    if (const std::string* name = known_name(v)) return "%" + *name;
    if (!with_meta_) return declare(v, v->name, "v");  // standalone: bare names read best
    // A free variable: declared here, at its first use, with its type.
    std::string decl = declare(v, v->name, "v");
    return decl + ": " + v->dtype.to_string();
  }

  std::string immediate(const IntImmNode* p) {
    if (p->dtype == DataType::Int(64)) return std::to_string(p->value);
    if (p->dtype == DataType::Bool() && (p->value == 0 || p->value == 1)) return p->value ? "true" : "false";
    return p->dtype.to_string() + "(" + std::to_string(p->value) + ")";
  }

  std::string immediate(const FloatImmNode* p) {
    std::string text = format_double(p->value);
    if (!std::isfinite(p->value)) return p->dtype.to_string() + "(" + json_quote(text) + ")";
    if (p->dtype == DataType::Float(32)) return text;
    return p->dtype.to_string() + "(" + text + ")";
  }

  std::string prim(const PrimExpr& e) {
    std::string o;
    prim_to(o, e);
    return o;
  }
  void prim_to(std::string& o, const PrimExpr& e, int parent_precedence = 0, bool right = false) {
    with_stack([&] { prim_here(o, e, parent_precedence, right); });
  }
  void prim_here(std::string& o, const PrimExpr& e, int parent_precedence, bool right) {
    if (!e.defined()) {
      o += meta_ref(Any());
      return;
    }
    const Object* obj = e.get();
    if (const auto* p = e.as<IntImmNode>()) {
      o += immediate(p);
    } else if (const auto* p = e.as<FloatImmNode>()) {
      o += immediate(p);
    } else if (const auto* p = e.as<StringImmNode>()) {
      o += json_quote(p->value);
    } else if (const auto* p = e.as<VarNode>()) {
      o += var_ref(p);
    } else if (const auto* p = e.as<BinaryOpNode>()) {
      const char* symbol = nullptr;
      int precedence = binary_precedence(obj, &symbol);
      if (!precedence) {
        o += obj->is_instance<MinNode>() ? "min(" : "max(";
        prim_to(o, p->a);
        o += ", ";
        prim_to(o, p->b);
        o += ")";
        return;
      }
      bool paren = precedence < parent_precedence || (precedence == parent_precedence && right);
      if (paren) o += "(";
      prim_to(o, p->a, precedence, false);
      o += " ";
      o += symbol;
      o += " ";
      prim_to(o, p->b, precedence, true);
      if (paren) o += ")";
    } else if (const auto* p = e.as<NotNode>()) {
      o += "!";
      prim_to(o, p->a, 6);
    } else if (const auto* p = e.as<SelectNode>()) {
      o += "select(";
      prim_to(o, p->condition);
      o += ", ";
      prim_to(o, p->true_value);
      o += ", ";
      prim_to(o, p->false_value);
      o += ")";
    } else if (const auto* p = e.as<CastNode>()) {
      o += "cast(" + p->dtype.to_string() + ", ";
      prim_to(o, p->value);
      o += ")";
    } else if (const auto* p = e.as<CallNode>()) {
      o += "call(" + p->dtype.to_string() + ", " + json_quote(p->op);
      for (const Any& a : p->args) {
        o += ", ";
        prim_to(o, a.cast<PrimExpr>());
      }
      o += ")";
    } else if (const auto* p = e.as<BufferLoadNode>()) {
      o += buffer_ref(p->buffer);
      indices_to(o, p->indices);
    } else if (const auto* p = e.as<RampNode>()) {
      o += "ramp(";
      prim_to(o, p->base);
      o += ", ";
      prim_to(o, p->stride);
      o += ", " + std::to_string(p->lanes) + ")";
    } else if (const auto* p = e.as<BroadcastNode>()) {
      o += "broadcast(";
      prim_to(o, p->value);
      o += ", " + std::to_string(p->lanes) + ")";
    } else if (const auto* p = e.as<LetNode>()) {
      o += "(let " + declare(p->var.get(), p->var->name, "v") + ": " + p->var->dtype.to_string() + " = ";
      prim_to(o, p->value);
      o += " in ";
      prim_to(o, p->body);
      o += ")";
    } else {
      o += meta_ref(Any(e));
    }
  }

  std::string indices(const Array& idx) {
    std::string o;
    indices_to(o, idx);
    return o;
  }
  void indices_to(std::string& o, const Array& idx) {
    o += "[";
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) o += ", ";
      prim_to(o, idx[i].cast<PrimExpr>());
    }
    o += "]";
  }

  // ---- buffers -------------------------------------------------------------
  // A declared buffer's name; a free buffer (no parameter or alloc declares
  // it) is declared at its first use, like a free variable.
  std::string buffer_ref(const Buffer& b) {
    if (const std::string* name = known_name(b.get())) return "%" + *name;
    if (!with_meta_) return declare(b.get(), b->name, "buf");
    return buffer_decl(b);
  }

  // "%A: Buffer[(16), float32, ...]", declaring the buffer (and its data var).
  std::string buffer_decl(const Buffer& b) {
    std::string shape = "(";
    for (size_t i = 0; i < b->shape.size(); ++i) shape += (i ? ", " : "") + prim(b->shape[i].cast<PrimExpr>());
    shape += ")";
    std::string extra;
    if (b->strides.size()) {
      extra += ", strides=(";
      for (size_t i = 0; i < b->strides.size(); ++i) extra += (i ? ", " : "") + prim(b->strides[i].cast<PrimExpr>());
      extra += ")";
    }
    const auto* offset = b->elem_offset.as<IntImmNode>();
    if (!(offset && offset->value == 0 && offset->dtype == DataType::Int(64)))
      extra += ", offset=" + prim(b->elem_offset);
    if (b->scope != "global") extra += ", scope=" + json_quote(b->scope);
    std::string name = declare(b.get(), b->name, "buf");
    const VarNode* data = b->data.get();
    if (const std::string* data_name = known_name(data)) {
      extra += ", data=%" + *data_name;
    } else {
      std::string natural = name.substr(1) + "_data";
      std::string data_decl = declare(data, natural, "data");
      if (data_decl != "%" + natural || data->dtype != DataType::Handle()) {
        extra += ", data=" + data_decl + (data->dtype != DataType::Handle() ? ": " + data->dtype.to_string() : "");
      }
    }
    return name + ": Buffer[" + shape + ", " + b->dtype.to_string() + extra + "]";
  }

  // ---- statements ----------------------------------------------------------
  // Two spaces per level, up to kMaxIndent levels: deeper statements are
  // printed at that indentation, so the text stays linear in the program
  // (docs/reliability.md, "Depth").
  static constexpr int kMaxIndent = 64;
  std::string pad() const { return std::string(std::min(indent_, kMaxIndent) * 2, ' '); }
  void line(const std::string& text) { out_ << pad() << text << "\n"; }

  void block(const Stmt& body) {
    out_ << "{\n";
    ++indent_;
    if (const auto* seq = body.as<SeqStmtNode>(); seq && plain_seq(seq)) {
      for (const Any& s : seq->seq) stmt(s.cast<Stmt>());
    } else {
      stmt(body);
    }
    --indent_;
    out_ << pad() << "}";
  }

  // A SeqStmt a block can express: two or more items, none a SeqStmt.
  static bool plain_seq(const SeqStmtNode* seq) {
    if (seq->seq.size() < 2) return false;
    for (const Any& s : seq->seq)
      if (s.object() && s.object()->is_instance<SeqStmtNode>()) return false;
    return true;
  }

  void open(const std::string& head, const Stmt& body) {
    out_ << pad() << head << " ";
    block(body);
    out_ << "\n";
  }

  void stmt(const Stmt& s) {
    with_stack([&] { stmt_here(s); });
  }
  void stmt_here(const Stmt& s) {
    if (const auto* p = s.as<ForNode>()) {
      std::string var = declare(p->loop_var.get(), p->loop_var->name, "i");
      std::string head =
          cat({"for ", var, ": ", p->loop_var->dtype.to_string(), " from ", prim(p->min), " extent ", prim(p->extent)});
      ForKind kind = p->for_kind();
      if (kind == ForKind::kThreadBinding)
        head += " thread(" + json_quote(p->thread) + ")";
      else if (kind != ForKind::kSerial)
        head += std::string(" ") + for_kind_name(kind);
      if (p->annotations.size()) head += " annotations " + value(p->annotations);
      open(head, p->body);
    } else if (const auto* p = s.as<BufferStoreNode>()) {
      line(cat({buffer_ref(p->buffer), indices(p->indices), " = ", prim(p->value), ";"}));
    } else if (const auto* p = s.as<AllocateNode>()) {
      open("alloc " + buffer_decl(p->buffer), p->body);
    } else if (const auto* p = s.as<LetStmtNode>()) {
      std::string var = declare(p->var.get(), p->var->name, "v");
      open(cat({"let ", var, ": ", p->var->dtype.to_string(), " = ", prim(p->value)}), p->body);
    } else if (const auto* p = s.as<IfThenElseNode>()) {
      out_ << pad() << "if " << prim(p->condition) << " ";
      block(p->then_case);
      if (p->else_case.defined()) {
        out_ << " else ";
        block(p->else_case);
      }
      out_ << "\n";
    } else if (const auto* p = s.as<SeqStmtNode>()) {
      out_ << pad() << "seq {\n";
      ++indent_;
      for (const Any& item : p->seq) stmt(item.cast<Stmt>());
      --indent_;
      line("}");
    } else if (const auto* p = s.as<EvaluateNode>()) {
      line("eval " + prim(p->value) + ";");
    } else if (const auto* p = s.as<AttrStmtNode>()) {
      open(cat({"attr ", json_quote(p->key), " = ", prim(p->value)}), p->body);
    } else {
      line(meta_ref(Any(s)) + ";");
    }
  }

  // ---- graph expressions ---------------------------------------------------
  std::string graph_var_ref(const graph::VarNode* v) {
    if (const std::string* name = known_name(v)) return "%" + *name;
    if (!with_meta_) return declare(v, v->name, "v");
    std::string decl = declare(v, v->name, "v");
    return decl + ": " + (v->annotation.defined() ? type(v->annotation) : "_");
  }

  // A graph variable that prints as plain "%name" (not its first use).
  bool is_named_var(const Expr& e) const { return e.as<graph::VarNode>() && known_name(e.get()); }

  // "let %v: T" for a let; "%v" for a value the body shares, bound by
  // shared_body() (parsed back as the shared node, with no let).
  std::string binding(const graph::Var& v) {
    if (shared_.count(v.get())) return declare(v.get(), v->name, "v");
    return "let " + graph_decl(v);
  }

  // A graph body with each value used in several places bound once, so a
  // DAG prints (and parses back) as a DAG, not as a tree that computes the
  // value at every use.
  Expr shared_body(const Expr& body) { return graph::bind_shared_values(body, &shared_); }

  std::string graph_decl(const graph::Var& v) {
    std::string decl = declare(v.get(), v->name, "v");
    return v->annotation.defined() ? decl + ": " + type(v->annotation) : decl;
  }

  std::string graph(const Expr& e) {
    std::string o;
    graph_to(o, e);
    return o;
  }
  void graph_to(std::string& o, const Expr& e) {
    with_stack([&] { graph_here(o, e); });
  }
  void graph_here(std::string& o, const Expr& e) {
    if (const auto* p = e.as<graph::VarNode>()) {
      o += graph_var_ref(p);
    } else if (const auto* p = e.as<GlobalVarNode>()) {
      o += global_name(p->name);
    } else if (const auto* p = e.as<OpNode>()) {
      o += "op(" + json_quote(p->name) + ")";
    } else if (const auto* p = e.as<graph::ConstantNode>()) {
      o += meta_ref(Any(p->data));
    } else if (const auto* p = e.as<graph::CallNode>()) {
      if (const auto* op = p->callee.as<OpNode>()) {
        o += op->name;
      } else if (p->callee.as<GlobalVarNode>() || is_named_var(p->callee)) {
        graph_to(o, p->callee);
      } else {
        o += "(";
        graph_to(o, p->callee);
        o += ")";
      }
      if (p->type_args.size()) {
        o += "<";
        for (size_t i = 0; i < p->type_args.size(); ++i) {
          if (i) o += ", ";
          type_to(o, p->type_args[i].cast<Type>());
        }
        o += ">";
      }
      o += "(";
      bool first = true;
      for (const Any& a : p->args) {
        if (!first) o += ", ";
        graph_to(o, a.cast<Expr>());
        first = false;
      }
      if (p->attrs.defined()) {
        for (const auto& item : p->attrs->items) {
          if (!first) o += ", ";
          o += item.first + "=";
          value_to(o, item.second);
          first = false;
        }
      }
      o += ")";
    } else if (const auto* p = e.as<graph::TupleNode>()) {
      o += "(";
      for (size_t i = 0; i < p->fields.size(); ++i) {
        if (i) o += ", ";
        graph_to(o, p->fields[i].cast<Expr>());
      }
      o += p->fields.size() == 1 ? ",)" : ")";
    } else if (const auto* p = e.as<graph::TupleGetItemNode>()) {
      const Object* t = p->tuple.get();
      // A variable's first use carries ": TYPE", which must not run into ".N".
      bool simple = t && (is_named_var(p->tuple) || t->is_instance<graph::TupleNode>() ||
                          t->is_instance<graph::CallNode>() || t->is_instance<graph::TupleGetItemNode>());
      if (!simple) o += "(";
      graph_to(o, p->tuple);
      if (!simple) o += ")";
      o += "." + std::to_string(p->index);
    } else if (e.as<graph::LetNode>() || e.as<graph::IfNode>()) {
      // In an operand position: a block expression.
      o += "{ ";
      graph_inline_body(o, e);
      o += " }";
    } else {
      o += meta_ref(Any(e));
    }
  }

  // Let chains and if, on one line (inside a block expression).
  void graph_inline_body(std::string& o, const Expr& e) {
    with_stack([&] { graph_inline_body_here(o, e); });
  }
  void graph_inline_body_here(std::string& o, const Expr& e) {
    Expr cur = e;
    cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
      o += binding(let.var) + " = ";
      graph_to(o, let.value);
      o += "; ";
    });
    if (const auto* p = cur.as<graph::IfNode>()) {
      o += "if (";
      graph_to(o, p->cond);
      o += ") { ";
      graph_inline_body(o, p->then_branch);
      o += " } else { ";
      graph_inline_body(o, p->else_branch);
      o += " }";
    } else {
      graph_to(o, cur);
    }
  }

  // A function or branch body: one let per line, then the result.
  void graph_body(const Expr& e) {
    with_stack([&] { graph_body_here(e); });
  }
  void graph_body_here(const Expr& e) {
    Expr cur = e;
    cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
      std::string var = binding(let.var);
      line(cat({var, " = ", graph(let.value), ";"}));
    });
    if (const auto* p = cur.as<graph::IfNode>()) {
      out_ << pad() << "if (" << graph(p->cond) << ") {\n";
      ++indent_;
      graph_body(p->then_branch);
      --indent_;
      line("} else {");
      ++indent_;
      graph_body(p->else_branch);
      --indent_;
      line("}");
    } else {
      line(graph(cur));
    }
  }

  // ---- functions -----------------------------------------------------------
  std::string attrs_suffix(const BaseFuncNode* f) { return f->attrs.size() ? " attrs " + value(f->attrs) : ""; }

  void function(const Object* o) {
    if (const auto* f = dynamic_cast<const graph::FunctionNode*>(o)) {
      std::string params;
      for (size_t i = 0; i < f->params.size(); ++i)
        params += (i ? ", " : "") + graph_decl(f->params[i].cast<graph::Var>());
      out_ << "fn(" << params << ")";
      if (f->ret_type.defined()) out_ << " -> " << type(f->ret_type);  // << is sequenced left to right
      out_ << attrs_suffix(f) << " {\n";
      ++indent_;
      graph_body(shared_body(f->body));
      --indent_;
      out_ << "}";
    } else if (const auto* f = dynamic_cast<const PrimFuncNode*>(o)) {
      // Scalar parameters are named first so buffer shapes may use them.
      for (const Any& p : f->params)
        if (const auto* v = p.object()->is_instance<VarNode>() ? static_cast<const VarNode*>(p.object()) : nullptr)
          declare(v, v->name, "v");
      std::string params;
      bool first = true;
      for (const Any& p : f->params) {
        params += first ? "" : ", ";
        first = false;
        if (const auto* v = p.object()->is_instance<VarNode>() ? static_cast<const VarNode*>(p.object()) : nullptr) {
          params += "%" + *known_name(v) + ": " + v->dtype.to_string();
        } else {
          params += buffer_decl(p.cast<Buffer>());
        }
      }
      out_ << "prim_func(" << params << ")";
      if (f->ret.defined()) out_ << " -> " << type(f->ret);
      out_ << attrs_suffix(f) << " {\n";
      ++indent_;
      if (const auto* seq = f->body.as<SeqStmtNode>(); seq && plain_seq(seq)) {
        for (const Any& s : seq->seq) stmt(s.cast<Stmt>());
      } else {
        stmt(f->body);
      }
      --indent_;
      out_ << "}";
    } else if (const auto* f = dynamic_cast<const ExternFuncNode*>(o)) {
      out_ << "extern " << json_quote(f->kind) << " " << f->convention << " " << type(f->signature) << attrs_suffix(f);
      if (f->encoding != "text") out_ << " encoding " << json_quote(f->encoding);
      out_ << " payload " << json_quote(f->payload);
    } else {
      out_ << meta_ref(Any(ObjectRef(ObjectPtr<Object>(const_cast<Object*>(o)))));
    }
  }

  bool with_meta_;
  uint64_t elide_bytes_;
  BlobSink sink_;
  std::unordered_set<const Object*> shared_;  // variables shared_body() introduced
  std::ostringstream out_;
  int indent_ = 0;
  std::unordered_map<const Object*, std::string> names_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_suffix_;
  std::vector<Any> meta_;
  std::unordered_map<const Object*, size_t> meta_index_;
};

}  // namespace

std::string print_module(const IRModule& module) { return Printer(true).module(module); }

std::string print_module(const IRModule& module, uint64_t elide_constants_over) {
  return Printer(true, elide_constants_over).module(module);
}

std::string print_module(const IRModule& module, const BlobSink& sink) {
  return Printer(true, UINT64_MAX, sink).module(module);
}

namespace {
std::string standalone_text(const Any& node) { return Printer(false).standalone(node); }
const bool installed = (ir::set_node_printer(&standalone_text), true);
}  // namespace

}  // namespace loom::text
