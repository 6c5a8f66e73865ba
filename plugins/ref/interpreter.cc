#include "interpreter.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include "loom/ir/text.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/stack.h"
#include "loom/support/strings.h"
#include "loom/tir/util.h"

namespace loom::ref {

namespace {
// The node as a T, or nullptr: Loom's type index, not dynamic_cast (which
// compares type names across the plugins' RTTI, a string compare per
// node the interpreter visits: most of FoldConstant's time).
template <class T>
const T* as_node(const Object* node) {
  return node->is_instance<T>() ? static_cast<const T*>(node) : nullptr;
}

using runtime::NDArray;
using runtime::NDArrayNode;

using tir::is_float;

// One lane: `i` for int, uint and bool types, `f` for floats.
struct Lane {
  int64_t i = 0;
  double f = 0;
};

// A value of a prim expression: `t.lanes` lanes (inline when one).
struct Value {
  DataType t;
  Lane one;
  std::vector<Lane> many;
  static Value of(DataType t) {
    Value v;
    v.t = t;
    if (t.lanes > 1) v.many.resize(t.lanes);
    return v;
  }
  int lanes() const { return t.lanes; }
  // Lane k; a scalar answers for every lane (a scalar used with a vector).
  Lane& at(int k) { return t.lanes == 1 ? one : many[k]; }
  const Lane& at(int k) const { return t.lanes == 1 ? one : many[k]; }
};

// IEEE half and bfloat16 rounding (nearest even), through their bits.
uint16_t float_to_half_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mantissa = x & 0x7fffffu;
  int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

// A double narrowed to float rounding to odd (toward zero, the last bit
// set when inexact): narrowing that to a 16-bit float then rounds once, as
// float keeps more than twice their bits plus two. Narrowing to nearest
// twice rounds 1 + 2^-11 + 2^-40 to 1 instead of float16's 1 + 2^-10.
float to_float_rounding_to_odd(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) --x;  // rounded away from zero: one step back
  x |= 1u;
  std::memcpy(&f, &x, 4);
  return f;
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  uint32_t x;
  if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

uint16_t float_to_bfloat_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat_bits_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

// Brings a lane into its type's range: rounding for narrow floats,
// wrapping for narrow integers.
void normalize(Lane& l, DataType t) {
  if (t.code == DataType::kFloat) {
    if (t.bits == 32) l.f = static_cast<float>(l.f);
    if (t.bits == 16) l.f = half_bits_to_float(float_to_half_bits(to_float_rounding_to_odd(l.f)));
  } else if (t.code == DataType::kBFloat) {
    l.f = bfloat_bits_to_float(float_to_bfloat_bits(to_float_rounding_to_odd(l.f)));
  } else if (t.code == DataType::kBool) {
    l.i = l.i != 0;
  } else if (t.bits < 64) {
    uint64_t mask = (uint64_t{1} << t.bits) - 1, u = static_cast<uint64_t>(l.i) & mask;
    if (t.code == DataType::kInt && (u >> (t.bits - 1))) u |= ~mask;
    l.i = static_cast<int64_t>(u);
  }
}

// Memory behind a data var.
struct Memory {
  char* base = nullptr;
  size_t bytes = 0;
};

size_t element_bytes(DataType t) { return static_cast<size_t>((t.bits + 7) / 8); }

Lane load_lane(const char* p, DataType t) {
  Lane l;
  switch (t.code) {
    case DataType::kFloat:
      if (t.bits == 32) {
        float v;
        std::memcpy(&v, p, 4);
        l.f = v;
      } else if (t.bits == 64) {
        std::memcpy(&l.f, p, 8);
      } else if (t.bits == 16) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        l.f = half_bits_to_float(h);
      }
      return l;
    case DataType::kBFloat: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      l.f = bfloat_bits_to_float(b);
      return l;
    }
    default: {
      uint64_t u = 0;
      std::memcpy(&u, p, element_bytes(t));
      l.i = static_cast<int64_t>(u);
      normalize(l, DataType(static_cast<DataType::Code>(t.code), t.bits));
      return l;
    }
  }
}

void store_lane(char* p, DataType t, const Lane& l) {
  switch (t.code) {
    case DataType::kFloat:
      if (t.bits == 32) {
        float v = static_cast<float>(l.f);
        std::memcpy(p, &v, 4);
      } else if (t.bits == 64) {
        std::memcpy(p, &l.f, 8);
      } else if (t.bits == 16) {
        uint16_t h = float_to_half_bits(to_float_rounding_to_odd(l.f));
        std::memcpy(p, &h, 2);
      }
      return;
    case DataType::kBFloat: {
      uint16_t b = float_to_bfloat_bits(to_float_rounding_to_odd(l.f));
      std::memcpy(p, &b, 2);
      return;
    }
    default: {
      uint64_t u = static_cast<uint64_t>(l.i);
      std::memcpy(p, &u, element_bytes(t));
    }
  }
}

using Unary = double (*)(double);
const std::map<std::string, Unary>& float_intrinsics() {
  static const std::map<std::string, Unary> table = {
      {"exp", [](double x) { return std::exp(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"log2", [](double x) { return std::log2(x); }},
      {"log10", [](double x) { return std::log10(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"trunc", [](double x) { return std::trunc(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"tan", [](double x) { return std::tan(x); }},
      {"asin", [](double x) { return std::asin(x); }},
      {"acos", [](double x) { return std::acos(x); }},
      {"atan", [](double x) { return std::atan(x); }},
      {"sinh", [](double x) { return std::sinh(x); }},
      {"cosh", [](double x) { return std::cosh(x); }},
      {"asinh", [](double x) { return std::asinh(x); }},
      {"acosh", [](double x) { return std::acosh(x); }},
      {"atanh", [](double x) { return std::atanh(x); }},
  };
  return table;
}

class Interpreter {
 public:
  explicit Interpreter(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(const std::string& message) const { LOOM_THROW(Error) << "@" << name_ << ": " << message; }

  void bind(const Object* var, Value v) { vars_[var] = std::move(v); }
  void bind_int(const Object* var, DataType t, int64_t i) {
    Value v = Value::of(t);
    v.one.i = i;
    normalize(v.one, t);
    bind(var, v);
  }
  void bind_memory(const Object* data_var, Memory m) { memory_[data_var] = m; }

  int64_t scalar_int(const tir::PrimExpr& e) {
    Value v = eval(e);
    if (v.lanes() != 1) fail("expected a scalar, got " + ir::to_text(Any(e)));
    return is_float(v.t) ? static_cast<int64_t>(v.one.f) : v.one.i;
  }

  // Runs `s`; true when a `ret` ended the function.
  bool exec(const tir::Stmt& s) {
    return with_stack([&] { return exec_here(s); });  // one level of stack per level of nesting
  }

  bool exec_here(const tir::Stmt& s) {
    if (const auto* f = s.as<tir::ForNode>()) {
      int64_t begin = scalar_int(f->min), extent = scalar_int(f->extent);
      DataType t = f->loop_var->dtype;
      for (int64_t i = begin; i < begin + extent; ++i) {
        bind_int(f->loop_var.get(), t, i);
        if (exec(f->body)) return true;
      }
      vars_.erase(f->loop_var.get());
      return false;
    }
    if (const auto* st = s.as<tir::BufferStoreNode>()) {
      Value v = eval(st->value);
      access(st->buffer, st->indices, &v, v.lanes());
      return false;
    }
    if (const auto* seq = s.as<tir::SeqStmtNode>()) {
      for (const Any& item : seq->seq)
        if (exec(item.cast<tir::Stmt>())) return true;
      return false;
    }
    if (const auto* let = s.as<tir::LetStmtNode>()) {
      bind(let->var.get(), eval(let->value));
      bool done = exec(let->body);
      vars_.erase(let->var.get());
      return done;
    }
    if (const auto* i = s.as<tir::IfThenElseNode>()) {
      Value c = eval(i->condition);
      if (c.lanes() != 1) fail("the condition of an if is a vector");
      if (truth(c.one, c.t)) return exec(i->then_case);
      return i->else_case.defined() ? exec(i->else_case) : false;
    }
    if (const auto* a = s.as<tir::AllocateNode>()) {
      int64_t count = 1;
      for (const Any& d : a->buffer->shape) count *= scalar_int(d.cast<tir::PrimExpr>());
      if (count < 0) fail("allocation of " + a->buffer->name + " with a negative size");
      auto storage = std::make_unique<std::vector<char>>(static_cast<size_t>(count) * element_bytes(a->buffer->dtype) *
                                                         a->buffer->dtype.lanes);
      bind_memory(a->buffer->data.get(), Memory{storage->data(), storage->size()});
      bool done = exec(a->body);
      memory_.erase(a->buffer->data.get());
      return done;
    }
    if (const auto* e = s.as<tir::EvaluateNode>()) {
      if (const auto* call = e->value.as<tir::CallNode>(); call && call->op == "ret") {
        if (call->args.size() != 1) fail("ret takes one value");
        result_ = eval(call->args[0].cast<tir::PrimExpr>());
        has_result_ = true;
        return true;
      }
      eval(e->value);
      return false;
    }
    if (const auto* a = s.as<tir::AttrStmtNode>()) return exec(a->body);
    fail(std::string("cannot run a ") + s->type_key());
  }

  Value eval(const tir::PrimExpr& e) {
    return with_stack([&] { return eval_here(e); });  // one level of stack per level of nesting
  }

  Value eval_here(const tir::PrimExpr& e) {
    const Object* node = e.get();
    if (const auto* i = as_node<tir::IntImmNode>(node)) {
      Value v = Value::of(i->dtype);
      if (is_float(i->dtype)) {
        v.one.f = static_cast<double>(i->value);
      } else {
        v.one.i = i->value;
      }
      return v;
    }
    if (const auto* f = as_node<tir::FloatImmNode>(node)) {
      Value v = Value::of(f->dtype);
      v.one.f = f->value;
      normalize(v.one, f->dtype);
      return v;
    }
    if (as_node<tir::VarNode>(node)) {
      auto found = vars_.find(node);
      if (found == vars_.end()) fail("%" + static_cast<const tir::VarNode*>(node)->name + " has no value");
      return found->second;
    }
    if (const auto* b = as_node<tir::BinaryOpNode>(node)) return binary(e, *b);
    if (const auto* n = as_node<tir::NotNode>(node)) {
      Value a = eval(n->a), out = Value::of(n->dtype);
      for (int k = 0; k < out.lanes(); ++k) out.at(k).i = !truth(a.at(k), a.t);
      return out;
    }
    if (const auto* s = as_node<tir::SelectNode>(node)) {
      Value c = eval(s->condition), t = eval(s->true_value), f = eval(s->false_value), out = Value::of(s->dtype);
      for (int k = 0; k < out.lanes(); ++k) out.at(k) = truth(c.at(k), c.t) ? t.at(k) : f.at(k);
      return out;
    }
    if (const auto* c = as_node<tir::CastNode>(node)) {
      Value a = eval(c->value), out = Value::of(c->dtype);
      for (int k = 0; k < out.lanes(); ++k) out.at(k) = convert(a.at(k), a.t, c->dtype);
      return out;
    }
    if (const auto* l = as_node<tir::BufferLoadNode>(node)) {
      Value out = Value::of(l->dtype);
      access(l->buffer, l->indices, &out, -out.lanes());
      return out;
    }
    if (const auto* r = as_node<tir::RampNode>(node)) {
      Value base = eval(r->base), stride = eval(r->stride), out = Value::of(r->dtype);
      for (int k = 0; k < out.lanes(); ++k) {
        out.at(k).i = base.one.i + k * stride.one.i;
        out.at(k).f = base.one.f + k * stride.one.f;
      }
      return out;
    }
    if (const auto* b = as_node<tir::BroadcastNode>(node)) {
      Value v = eval(b->value), out = Value::of(b->dtype);
      for (int k = 0; k < out.lanes(); ++k) out.at(k) = v.one;
      return out;
    }
    if (const auto* l = as_node<tir::LetNode>(node)) {
      bind(l->var.get(), eval(l->value));
      Value out = eval(l->body);
      vars_.erase(l->var.get());
      return out;
    }
    if (const auto* c = as_node<tir::CallNode>(node)) return intrinsic(*c);
    fail("cannot evaluate " + ir::to_text(Any(e)));
  }

  bool has_result() const { return has_result_; }
  const Value& result() const { return result_; }

 private:
  static bool truth(const Lane& l, DataType t) { return is_float(t) ? l.f != 0 : l.i != 0; }

  static Lane convert(const Lane& l, DataType from, DataType to) {
    Lane out;
    if (is_float(to)) {
      out.f = is_float(from)
                  ? l.f
                  : (from.code == DataType::kUInt && from.bits == 64 ? static_cast<double>(static_cast<uint64_t>(l.i))
                                                                     : static_cast<double>(l.i));
    } else if (to.code == DataType::kBool) {
      out.i = truth(l, from);
    } else if (is_float(from)) {
      out.i = std::isfinite(l.f) ? static_cast<int64_t>(std::trunc(l.f)) : 0;
    } else {
      out.i = l.i;
    }
    normalize(out, DataType(static_cast<DataType::Code>(to.code), to.bits));
    return out;
  }

  Value binary(const tir::PrimExpr& e, const tir::BinaryOpNode& b) {
    Value x = eval(b.a), y = eval(b.b);
    Value out = Value::of(e->dtype);
    bool fl = is_float(x.t);
    const Object* n = e.get();
    auto is = [n](auto* tag) { return n->is_instance<std::remove_const_t<std::remove_pointer_t<decltype(tag)>>>(); };
    DataType scalar(static_cast<DataType::Code>(e->dtype.code), e->dtype.bits);
    for (int k = 0; k < out.lanes(); ++k) {
      const Lane &p = x.at(k), &q = y.at(k);
      Lane& r = out.at(k);
      if (is(static_cast<const tir::AddNode*>(nullptr))) {
        fl ? r.f = p.f + q.f : r.i = static_cast<int64_t>(static_cast<uint64_t>(p.i) + static_cast<uint64_t>(q.i));
      } else if (is(static_cast<const tir::SubNode*>(nullptr))) {
        fl ? r.f = p.f - q.f : r.i = static_cast<int64_t>(static_cast<uint64_t>(p.i) - static_cast<uint64_t>(q.i));
      } else if (is(static_cast<const tir::MulNode*>(nullptr))) {
        fl ? r.f = p.f* q.f : r.i = static_cast<int64_t>(static_cast<uint64_t>(p.i) * static_cast<uint64_t>(q.i));
      } else if (is(static_cast<const tir::MinNode*>(nullptr))) {
        fl ? r.f = std::fmin(p.f, q.f) : r.i = std::min(p.i, q.i);
        if (fl && (std::isnan(p.f) || std::isnan(q.f))) r.f = NAN;  // NumPy's minimum propagates NaN
      } else if (is(static_cast<const tir::MaxNode*>(nullptr))) {
        fl ? r.f = std::fmax(p.f, q.f) : r.i = std::max(p.i, q.i);
        if (fl && (std::isnan(p.f) || std::isnan(q.f))) r.f = NAN;
      } else if (is(static_cast<const tir::DivNode*>(nullptr))) {
        if (fl) {
          r.f = p.f / q.f;
        } else {
          if (q.i == 0) fail("integer division by zero in " + ir::to_text(Any(e)));
          r.i = p.i / q.i;
        }
      } else if (is(static_cast<const tir::FloorDivNode*>(nullptr))) {
        if (fl) {
          r.f = std::floor(p.f / q.f);
        } else {
          if (q.i == 0) fail("integer division by zero in " + ir::to_text(Any(e)));
          int64_t d = p.i / q.i;
          if ((p.i % q.i != 0) && ((p.i < 0) != (q.i < 0))) --d;
          r.i = d;
        }
      } else if (is(static_cast<const tir::FloorModNode*>(nullptr))) {
        if (fl) {
          r.f = p.f - std::floor(p.f / q.f) * q.f;
        } else {
          if (q.i == 0) fail("integer modulo by zero in " + ir::to_text(Any(e)));
          int64_t m = p.i % q.i;
          if (m != 0 && ((m < 0) != (q.i < 0))) m += q.i;
          r.i = m;
        }
      } else if (is(static_cast<const tir::EQNode*>(nullptr))) {
        r.i = fl ? p.f == q.f : p.i == q.i;
      } else if (is(static_cast<const tir::NENode*>(nullptr))) {
        r.i = fl ? p.f != q.f : p.i != q.i;
      } else if (is(static_cast<const tir::LTNode*>(nullptr))) {
        r.i = fl ? p.f < q.f : less(p, q, x.t);
      } else if (is(static_cast<const tir::LENode*>(nullptr))) {
        r.i = fl ? p.f <= q.f : !less(q, p, x.t);
      } else if (is(static_cast<const tir::GTNode*>(nullptr))) {
        r.i = fl ? p.f > q.f : less(q, p, x.t);
      } else if (is(static_cast<const tir::GENode*>(nullptr))) {
        r.i = fl ? p.f >= q.f : !less(p, q, x.t);
      } else if (is(static_cast<const tir::AndNode*>(nullptr))) {
        r.i = truth(p, x.t) && truth(q, y.t);
      } else if (is(static_cast<const tir::OrNode*>(nullptr))) {
        r.i = truth(p, x.t) || truth(q, y.t);
      } else {
        fail("cannot evaluate " + ir::to_text(Any(e)));
      }
      normalize(r, scalar);
    }
    return out;
  }

  static bool less(const Lane& p, const Lane& q, DataType t) {
    if (t.code == DataType::kUInt) return static_cast<uint64_t>(p.i) < static_cast<uint64_t>(q.i);
    return p.i < q.i;
  }

  Value intrinsic(const tir::CallNode& c) {
    std::vector<Value> args;
    for (const Any& a : c.args) args.push_back(eval(a.cast<tir::PrimExpr>()));
    Value out = Value::of(c.dtype);
    DataType scalar(static_cast<DataType::Code>(c.dtype.code), c.dtype.bits);
    auto arity = [&](size_t n) {
      if (args.size() != n)
        fail(c.op + " takes " + std::to_string(n) + " argument(s), got " + std::to_string(args.size()));
    };
    const auto& table = float_intrinsics();
    auto unary = table.find(c.op);
    for (int k = 0; k < out.lanes(); ++k) {
      Lane& r = out.at(k);
      if (unary != table.end()) {
        arity(1);
        if (!is_float(args[0].t)) fail(c.op + " needs a float argument");
        r.f = unary->second(args[0].at(k).f);
      } else if (c.op == "abs") {
        arity(1);
        is_float(args[0].t) ? r.f = std::fabs(args[0].at(k).f) : r.i = std::llabs(args[0].at(k).i);
      } else if (c.op == "pow") {
        arity(2);
        r.f = std::pow(args[0].at(k).f, args[1].at(k).f);
      } else if (c.op == "fmod") {
        arity(2);
        r.f = std::fmod(args[0].at(k).f, args[1].at(k).f);
      } else if (c.op == "isnan") {
        arity(1);
        r.i = std::isnan(args[0].at(k).f);
      } else if (c.op == "isinf") {
        arity(1);
        r.i = std::isinf(args[0].at(k).f);
      } else if (c.op == "bitwise_not") {
        arity(1);
        r.i = ~args[0].at(k).i;
      } else if (c.op == "bitwise_and" || c.op == "bitwise_or" || c.op == "bitwise_xor") {
        arity(2);
        int64_t p = args[0].at(k).i, q = args[1].at(k).i;
        r.i = c.op == "bitwise_and" ? (p & q) : c.op == "bitwise_or" ? (p | q) : (p ^ q);
      } else if (c.op == "shift_left" || c.op == "shift_right") {
        arity(2);
        // normalize() wraps the lane to the type: shift in 64 bits, then
        // truncate; a shift by the width or more gives 0 (-1 for an
        // arithmetic right shift of a negative value).
        uint64_t amount = static_cast<uint64_t>(args[1].at(k).i);
        int64_t p = args[0].at(k).i;
        bool unsigned_type = scalar.code == DataType::kUInt;
        uint64_t bits_mask = scalar.bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << scalar.bits) - 1;
        if (c.op == "shift_left") {
          r.i = amount >= scalar.bits ? 0 : static_cast<int64_t>(static_cast<uint64_t>(p) << amount);
        } else if (unsigned_type) {
          r.i = amount >= scalar.bits ? 0 : static_cast<int64_t>((static_cast<uint64_t>(p) & bits_mask) >> amount);
        } else {
          r.i = p >> std::min<uint64_t>(amount, 63);
        }
      } else {
        std::vector<std::string> known = known_intrinsics();
        fail("unknown intrinsic '" + c.op + "'" + did_you_mean(c.op, known));
      }
      normalize(r, scalar);
    }
    return out;
  }

  // Loads (lanes < 0: -lanes lanes into *v) or stores (lanes > 0) at
  // buffer[indices], checking bounds.
  void access(const tir::Buffer& buffer, const Array& indices, Value* v, int lanes_signed) {
    const tir::BufferNode* b = buffer.get();
    auto mem = memory_.find(b->data.get());
    if (mem == memory_.end()) fail("buffer '" + b->name + "' has no memory here");
    int lanes = std::abs(lanes_signed);
    std::vector<Value> index;
    for (const Any& i : indices) index.push_back(eval(i.cast<tir::PrimExpr>()));
    // Strides in elements: given, or row-major from the shape.
    size_t rank = indices.size();
    std::vector<int64_t> strides(rank, 1);
    if (b->strides.size()) {
      if (b->strides.size() != rank)
        fail("buffer '" + b->name + "' has " + std::to_string(b->strides.size()) + " strides for " +
             std::to_string(rank) + " indices");
      for (size_t d = 0; d < rank; ++d) strides[d] = scalar_int(b->strides[d].cast<tir::PrimExpr>());
    } else {
      if (b->shape.size() != rank) {
        fail("buffer '" + b->name + "' has rank " + std::to_string(b->shape.size()) + " but is indexed with " +
             std::to_string(rank) + " indices");
      }
      for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * scalar_int(b->shape[d].cast<tir::PrimExpr>());
    }
    int64_t base = b->elem_offset.defined() ? scalar_int(b->elem_offset) : 0;
    size_t elem = element_bytes(b->dtype);
    DataType lane_type(static_cast<DataType::Code>(b->dtype.code), b->dtype.bits);
    for (int k = 0; k < lanes; ++k) {
      int64_t offset = base;
      for (size_t d = 0; d < rank; ++d) {
        const Lane& l = index[d].at(k);
        offset += (is_float(index[d].t) ? static_cast<int64_t>(l.f) : l.i) * strides[d];
      }
      if (offset < 0 || static_cast<size_t>(offset + 1) * elem > mem->second.bytes) {
        std::string at;
        for (size_t d = 0; d < rank; ++d) {
          const Lane& l = index[d].at(k);
          at += (d ? ", " : "") + std::to_string(is_float(index[d].t) ? static_cast<int64_t>(l.f) : l.i);
        }
        fail(std::string(lanes_signed < 0 ? "load from " : "store to ") + "'" + b->name + "'[" + at +
             "] is out of bounds (element " + std::to_string(offset) + " of " +
             std::to_string(mem->second.bytes / elem) + ")");
      }
      char* p = mem->second.base + offset * elem;
      if (lanes_signed < 0) {
        v->at(k) = load_lane(p, lane_type);
      } else {
        Lane l = v->at(k);
        if (is_float(lane_type) != is_float(v->t)) l = convert(l, v->t, lane_type);
        store_lane(p, lane_type, l);
      }
    }
  }

  std::string name_;
  std::unordered_map<const Object*, Value> vars_;
  std::unordered_map<const Object*, Memory> memory_;
  Value result_;
  bool has_result_ = false;
};

Any to_any(const Value& v) {
  if (v.lanes() != 1) LOOM_THROW(Error) << "a vector result cannot be returned";
  if (is_float(v.t)) return Any(v.one.f);
  if (v.t.code == DataType::kBool) return Any(v.one.i != 0);
  return Any(v.one.i);
}
}  // namespace

std::vector<std::string> known_intrinsics() {
  std::vector<std::string> out;
  for (const auto& item : float_intrinsics()) out.push_back(item.first);
  for (const char* name : {"abs", "pow", "fmod", "isnan", "isinf", "ret", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "bitwise_not", "shift_left", "shift_right"}) {
    out.push_back(name);
  }
  return out;
}

Any run_prim_func(const tir::PrimFunc& func, const std::string& name, const Any* args, int32_t count) {
  Interpreter in(name);
  std::vector<tir::Buffer> buffers = func.buffer_params();
  const auto& params = func->params;
  bool dps = static_cast<size_t>(count) == buffers.size() && buffers.size() != params.size();
  if (!dps && static_cast<size_t>(count) != params.size()) {
    in.fail("takes " + std::to_string(buffers.size()) + " tensors (or " + std::to_string(params.size()) +
            " values), got " + std::to_string(count));
  }
  std::vector<NDArray> keep;
  size_t next = 0;
  auto bind_buffer = [&](const tir::Buffer& b, const Any& arg, size_t index) {
    const auto* a = dynamic_cast<const NDArrayNode*>(arg.object());
    std::string what = "argument " + std::to_string(index) + " (buffer '" + b->name + "')";
    if (!a) in.fail(what + " must be a tensor, got " + arg.describe());
    if (a->device.device_type != Device::kCPU)
      in.fail(what + " is on " + a->device.to_string() + "; ref runs on the CPU");
    if (!a->is_contiguous()) in.fail(what + " is not contiguous");
    if (a->dtype != b->dtype)
      in.fail(what + " has dtype " + a->dtype.to_string() + ", expected " + b->dtype.to_string());
    if (a->shape.size() != b->shape.size()) {
      in.fail(what + " has " + std::to_string(a->shape.size()) + " dimensions, expected " +
              std::to_string(b->shape.size()));
    }
    in.bind_memory(b->data.get(), Memory{static_cast<char*>(const_cast<NDArrayNode*>(a)->data()), a->nbytes()});
    keep.push_back(arg.cast<NDArray>());
  };
  // Buffers first, then scalars: a scalar parameter of a call_dps call is
  // bound from the buffers' shapes (tir::bind_from_shapes).
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].as_object_ref().as<tir::BufferNode>()) {
      size_t arg = dps ? next++ : i;
      bind_buffer(downcast<tir::Buffer>(params[i].as_object_ref()), args[arg], arg);
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const auto* var = params[i].as_object_ref().as<tir::VarNode>();
    if (!var) continue;
    if (!dps) {
      const Any& a = args[i];
      if (a.kind() != AnyKind::kInt && a.kind() != AnyKind::kBool && a.kind() != AnyKind::kFloat) {
        in.fail("argument " + std::to_string(i) + " (%" + var->name + ") must be a number, got " + a.describe());
      }
      Value v = Value::of(var->dtype);
      if (is_float(var->dtype)) {
        v.one.f = a.as_float();
      } else {
        v.one.i = a.kind() == AnyKind::kBool ? a.as_bool() : a.as_int();
      }
      in.bind(var, v);
      continue;
    }
    auto bound = tir::bind_from_shapes(buffers, var);
    if (!bound) in.fail("%" + var->name + " is not a dimension of any buffer, so call_dps cannot pass it");
    const auto* array = static_cast<const NDArrayNode*>(args[bound->buffer].object());
    // Exact when the shapes are right, which the checks below confirm.
    in.bind_int(var, var->dtype, (array->shape[bound->dim].as_int() - bound->offset) / bound->scale);
  }
  // Every buffer dimension must agree with the tensor (variables are bound
  // now, so composite dimensions can be evaluated too).
  size_t k = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto* b = params[i].as_object_ref().as<tir::BufferNode>();
    if (!b) continue;
    size_t arg = dps ? k++ : i;
    const auto* array = static_cast<const NDArrayNode*>(args[arg].object());
    for (size_t d = 0; d < b->shape.size(); ++d) {
      int64_t want = in.scalar_int(b->shape[d].cast<tir::PrimExpr>()), got = array->shape[d].as_int();
      if (want != got) {
        in.fail("argument " + std::to_string(arg) + " (buffer '" + b->name + "') has dimension " + std::to_string(d) +
                " = " + std::to_string(got) + ", but the buffer says " + ir::to_text(b->shape[d]) + " = " +
                std::to_string(want));
      }
    }
  }
  in.exec(func->body);
  if (in.has_result()) return to_any(in.result());
  return Any();
}

}  // namespace loom::ref
