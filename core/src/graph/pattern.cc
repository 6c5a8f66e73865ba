// Patterns over graph expressions (loom/graph/pattern.h).
#include "loom/graph/pattern.h"

#include <algorithm>

#include "loom/ir/op.h"
#include "loom/ir/type.h"
#include "loom/object/structural.h"
#include "loom/support/strings.h"
#include "loom/tir/expr.h"

namespace loom::graph {

struct PatternImpl {
  enum class Kind { kWildcard, kConstant, kOp, kAlt } kind = Kind::kWildcard;
  std::string op;             // kOp
  std::vector<Pattern> args;  // kOp: the arguments; kAlt: the two choices
  struct Predicate {
    std::function<bool(const ir::Expr&)> test;
    std::string what;
  };
  std::vector<Predicate> predicates;
};

namespace {
Pattern make(PatternImpl impl) { return Pattern(std::make_shared<const PatternImpl>(std::move(impl))); }

const ir::TensorTypeNode* tensor_type(const ir::Expr& e) {
  return e->checked_type.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
}

class Matcher {
 public:
  explicit Matcher(const Bindings& bindings) : bindings_(bindings) {}

  bool run(const Pattern& p, const ir::Expr& e) {
    const PatternImpl* impl = p.get();
    ir::Expr value = resolve(e);
    // A sub-pattern met again must match the same expression (a DAG).
    auto seen = match_.bound.find(impl);
    if (seen != match_.bound.end()) return seen->second.same_as(value);
    Match saved = match_;  // a failed attempt leaves nothing bound
    bool ok = false;
    switch (impl->kind) {
      case PatternImpl::Kind::kWildcard:
        ok = true;
        break;
      case PatternImpl::Kind::kConstant:
        ok = value.as<ConstantNode>() != nullptr;
        break;
      case PatternImpl::Kind::kOp: {
        const auto* call = value.as<CallNode>();
        const auto* callee = call ? call->callee.as<ir::OpNode>() : nullptr;
        ok = callee && callee->name == impl->op && call->args.size() == impl->args.size();
        for (size_t k = 0; ok && k < impl->args.size(); ++k) ok = run(impl->args[k], call->args[k].cast<ir::Expr>());
        break;
      }
      case PatternImpl::Kind::kAlt:
        ok = run(impl->args[0], e);
        if (!ok) {
          match_ = saved;
          ok = run(impl->args[1], e);
        }
        break;
    }
    for (size_t k = 0; ok && k < impl->predicates.size(); ++k) ok = impl->predicates[k].test(value);
    if (!ok) {
      match_ = saved;
      return false;
    }
    match_.bound[impl] = value;
    if (impl->kind == PatternImpl::Kind::kOp) add_once(match_.calls, value);
    // What a wildcard or a constant matched is an input, as written (a
    // variable stays the variable).
    if (impl->kind == PatternImpl::Kind::kWildcard || impl->kind == PatternImpl::Kind::kConstant) {
      add_once(match_.inputs, e);
    }
    return true;
  }

  Match result(const ir::Expr& root) {
    match_.root = root;
    return match_;
  }

 private:
  ir::Expr resolve(ir::Expr e) const {
    for (int hops = 0; bindings_ && hops < 1024; ++hops) {
      const auto* var = e.as<VarNode>();
      if (!var) break;
      std::optional<ir::Expr> bound = bindings_(var);
      if (!bound) break;
      e = *bound;
    }
    return e;
  }
  static void add_once(std::vector<ir::Expr>& list, const ir::Expr& e) {
    if (std::none_of(list.begin(), list.end(), [&](const ir::Expr& x) { return x.same_as(e); })) list.push_back(e);
  }

  const Bindings& bindings_;
  Match match_;
};
}  // namespace

Pattern wildcard() { return make(PatternImpl{}); }

Pattern constant() {
  PatternImpl impl;
  impl.kind = PatternImpl::Kind::kConstant;
  return make(std::move(impl));
}

Pattern op(const std::string& name, std::vector<Pattern> args) {
  for (const Pattern& a : args)
    if (!a.get()) LOOM_THROW(Error) << "op(\"" << name << "\", ...): an empty pattern among its arguments";
  PatternImpl impl;
  impl.kind = PatternImpl::Kind::kOp;
  impl.op = name;
  impl.args = std::move(args);
  return make(std::move(impl));
}

Pattern Pattern::where(std::function<bool(const ir::Expr&)> pred, std::string what) const {
  if (!impl_) LOOM_THROW(Error) << "Pattern::where on an empty pattern";
  PatternImpl impl = *impl_;
  impl.predicates.push_back({std::move(pred), std::move(what)});
  return make(std::move(impl));
}

Pattern Pattern::has_dtype(DataType dtype) const {
  return where(
      [dtype](const ir::Expr& e) {
        const auto* t = tensor_type(e);
        return t && t->dtype == dtype;
      },
      "dtype " + dtype.to_string());
}

Pattern Pattern::has_rank(int64_t rank) const {
  return where(
      [rank](const ir::Expr& e) {
        const auto* t = tensor_type(e);
        return t && !t->unknown_rank() && static_cast<int64_t>(t->shape.size()) == rank;
      },
      "rank " + std::to_string(rank));
}

Pattern Pattern::has_shape(std::vector<int64_t> shape) const {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return where(
      [shape](const ir::Expr& e) {
        const auto* t = tensor_type(e);
        if (!t || t->unknown_rank() || t->shape.size() != shape.size()) return false;
        for (size_t k = 0; k < shape.size(); ++k) {
          const auto* imm = t->shape[k].as_object_ref().as<tir::IntImmNode>();
          if (!imm || imm->value != shape[k]) return false;
        }
        return true;
      },
      "shape (" + text + ")");
}

Pattern Pattern::has_attr(const std::string& name, Any value) const {
  return where(
      [name, value](const ir::Expr& e) {
        const auto* call = e.as<CallNode>();
        if (!call) return false;
        if (call->attrs.defined() && call->attrs.contains(name)) return structural_equal(call->attrs.at(name), value);
        // Not written: the operator schema's default.
        const auto* callee = call->callee.as<ir::OpNode>();
        std::optional<ir::OpEntry> entry = callee ? ir::OpRegistry::entry(callee->name) : std::nullopt;
        if (!entry) return false;
        for (const ir::OpAttrField& f : entry->def.attrs)
          if (f.name == name)
            return f.default_value.kind() != AnyKind::kNone && structural_equal(f.default_value, value);
        return false;
      },
      name + "=" + repr(value));
}

Pattern Pattern::operator|(const Pattern& other) const {
  if (!impl_ || !other.impl_) LOOM_THROW(Error) << "Pattern::operator|: an empty pattern";
  PatternImpl impl;
  impl.kind = PatternImpl::Kind::kAlt;
  impl.args = {*this, other};
  return make(std::move(impl));
}

std::string Pattern::describe() const {
  if (!impl_) return "(no pattern)";
  const PatternImpl& p = *impl_;
  std::string out;
  switch (p.kind) {
    case PatternImpl::Kind::kWildcard:
      out = "*";
      break;
    case PatternImpl::Kind::kConstant:
      out = "const";
      break;
    case PatternImpl::Kind::kOp: {
      std::vector<std::string> args;
      for (const Pattern& a : p.args) args.push_back(a.describe());
      out = "op(\"" + p.op + "\", [" + join(args, ", ") + "])";
      break;
    }
    case PatternImpl::Kind::kAlt:
      out = "(" + p.args[0].describe() + " | " + p.args[1].describe() + ")";
      break;
  }
  std::vector<std::string> preds;
  for (const auto& pred : p.predicates) preds.push_back(pred.what);
  return preds.empty() ? out : out + " where " + join(preds, " and ");
}

std::optional<Match> match(const Pattern& pattern, const ir::Expr& expr, const Bindings& bindings) {
  if (!pattern.get()) LOOM_THROW(Error) << "match: an empty pattern (made by Pattern())";
  Matcher m(bindings);
  if (!m.run(pattern, expr)) return std::nullopt;
  return m.result(expr);
}

}  // namespace loom::graph
