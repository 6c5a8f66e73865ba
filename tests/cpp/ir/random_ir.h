// A random IR generator for round-trip tests and benchmarks.  It builds
// modules through the checked constructors, so every node is well typed, and
// covers every node type of the IR: all prim expressions and statements
// (vectors, free variables, free and aliased buffers, nested and degenerate
// SeqStmts), all graph expressions (block expressions, free variables,
// constants), extern functions, every attribute value kind, odd names.
#ifndef LOOM_TESTS_CPP_IR_RANDOM_IR_H_
#define LOOM_TESTS_CPP_IR_RANDOM_IR_H_

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/tir/function.h"

namespace loom::test {

// Operators the generator calls; registered once per process.
inline void register_random_ir_ops() {
  static const bool done = [] {
    if (!ir::OpRegistry::entry("rand.add")) {
      ir::OpRegistry::register_op(ir::OpDef{"rand.add", 2, {}, Function(), ir::PatternKind::kBroadcast, ""});
      ir::OpRegistry::register_op(ir::OpDef{"rand.conv",
                                            -1,
                                            {{"strides", "Array", Array({1, 1}), ""},
                                             {"layout", "str", "NCHW", ""},
                                             {"alpha", "float", 1.0, ""},
                                             {"out_dtype", "dtype", DataType::Float(32), ""},
                                             {"flag", "bool", false, ""}},
                                            Function(),
                                            ir::PatternKind::kOutputFusable,
                                            ""});
    }
    return true;
  }();
  (void)done;
}

class RandomIR {
 public:
  explicit RandomIR(uint32_t seed, int size = 1) : rng_(seed), size_(size) { register_random_ir_ops(); }

  ir::IRModule module() {
    std::map<std::string, Any> functions;
    int count = 1 + pick(3) * size_;
    for (int i = 0; i < count; ++i) globals_.push_back(global_name(i));
    for (const auto& name : globals_) {
      int kind = pick(3);
      if (kind == 0)
        functions[name] = prim_func();
      else if (kind == 1)
        functions[name] = graph_func();
      else
        functions[name] = extern_func();
    }
    std::map<std::string, Any> attrs;
    if (chance(2)) attrs["target"] = "llvm";
    if (chance(2)) attrs["misc"] = value(2);
    std::map<std::string, Any> infos;
    if (chance(4)) infos["info"] = value(2);
    return ir::IRModule(functions, Map(attrs), Map(infos));
  }

  // ---- building blocks -------------------------------------------------------
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int one_in) { return pick(one_in) == 0; }

  std::string hint() {
    static const char* hints[] = {"x", "x", "y", "i", "n", "", "a.b", "tmp var", "A", "data", "x_1", "v"};
    return hints[pick(12)];
  }

  std::string global_name(int i) {
    static const char* names[] = {"main", "f", "nn.kernel", "add_one", "g", "with space"};
    return std::string(names[pick(6)]) + "_" + std::to_string(i);
  }

  DataType scalar_dtype() {
    static const DataType types[] = {DataType::Int(64),   DataType::Int(32),   DataType::Int(8),   DataType::UInt(16),
                                     DataType::Float(32), DataType::Float(64), DataType::Float(16)};
    return types[pick(7)];
  }

  bool is_float(DataType d) { return d.code == DataType::kFloat; }

  Any value(int depth) {
    switch (pick(depth > 0 ? 14 : 10)) {
      case 0:
        return Any();
      case 1:
        return Any(chance(2));
      case 2:
        return Any(static_cast<int64_t>(pick(2000) - 1000));
      case 3:
        return Any(std::ldexp(static_cast<double>(pick(1 << 20)) - (1 << 19), pick(40) - 20));
      case 4:
        return Any(chance(2) ? std::numeric_limits<double>::quiet_NaN() : -std::numeric_limits<double>::infinity());
      case 5:
        return Any(std::string("s\"q\\\n\t") + hint());
      case 6:
        return Any(DataType::Float(32, 1 + pick(2) * 3));
      case 7:
        return Any(Device::parse(chance(2) ? "cpu:0" : "opencl:1"));
      case 8:
        return Any(ir::PrimType(scalar_dtype()));
      case 9:
        return Any(tir::tensor_type({2, 3}, DataType::Float(16)));
      case 10:
      case 11: {
        std::vector<Any> items;
        for (int i = pick(3); i > 0; --i) items.push_back(value(depth - 1));
        return Array(items);
      }
      default: {
        std::map<std::string, Any> items;
        for (int i = pick(3); i > 0; --i)
          items[chance(2) ? "key" + std::to_string(i) : "odd key " + std::to_string(i)] = value(depth - 1);
        return Map(items);
      }
    }
  }

  // ---- prim IR ----------------------------------------------------------------
  tir::PrimExpr immediate(DataType d) {
    if (d == DataType::Bool()) return tir::IntImm(d, pick(2));
    if (is_float(d)) {
      int k = pick(10);
      double v = k == 0   ? std::numeric_limits<double>::quiet_NaN()
                 : k == 1 ? std::numeric_limits<double>::infinity()
                 : k == 2 ? -0.0
                          : std::ldexp(static_cast<double>(pick(1 << 16)) - (1 << 15), pick(30) - 15);
      return tir::FloatImm(d, v);
    }
    int64_t v =
        chance(10) ? std::numeric_limits<int64_t>::min() / (d.bits == 64 ? 1 : (int64_t{1} << 40)) : pick(200) - 100;
    return tir::IntImm(d, v);
  }

  tir::Var new_var(DataType d) { return tir::Var(hint(), d); }

  tir::PrimExpr var_of(DataType d) {
    std::vector<tir::Var> matching;
    for (const auto* list : {&prim_vars_, &free_prim_vars_})
      for (const auto& v : *list)
        if (v.dtype() == d) matching.push_back(v);
    if (matching.empty() || chance(8)) {
      tir::Var free = new_var(d);  // free: declared at its first printed use
      free_prim_vars_.push_back(free);
      return free;
    }
    return matching[pick(static_cast<int>(matching.size()))];
  }

  tir::PrimExpr index_expr(int depth) {
    if (depth <= 0 || chance(2)) return chance(2) ? var_of(DataType::Int(64)) : immediate(DataType::Int(64));
    return tir::Add(index_expr(depth - 1), index_expr(depth - 1));
  }

  tir::PrimExpr prim(DataType d, int depth) {
    if (depth <= 0) {
      int k = pick(3);
      if (k == 0) return immediate(d);
      if (k == 1 && d != DataType::Bool()) return var_of(d);
      if (d == DataType::Bool()) return tir::IntImm(d, pick(2));
      return load_of(d);
    }
    if (d == DataType::Bool()) {
      switch (pick(6)) {
        case 0:
          return tir::Not(prim(d, depth - 1));
        case 1:
          return tir::And(prim(d, depth - 1), prim(d, depth - 1));
        case 2:
          return tir::Or(prim(d, depth - 1), prim(d, depth - 1));
        default: {
          DataType t = scalar_dtype();
          tir::PrimExpr a = prim(t, depth - 1), b = prim(t, depth - 1);
          switch (pick(6)) {
            case 0:
              return tir::EQ(a, b);
            case 1:
              return tir::NE(a, b);
            case 2:
              return tir::LT(a, b);
            case 3:
              return tir::LE(a, b);
            case 4:
              return tir::GT(a, b);
            default:
              return tir::GE(a, b);
          }
        }
      }
    }
    switch (pick(14)) {
      case 0:
        return tir::Add(prim(d, depth - 1), prim(d, depth - 1));
      case 1:
        return tir::Sub(prim(d, depth - 1), prim(d, depth - 1));
      case 2:
        return tir::Mul(prim(d, depth - 1), prim(d, depth - 1));
      case 3:
        return tir::Div(prim(d, depth - 1), prim(d, depth - 1));
      case 4:
        return tir::FloorDiv(prim(d, depth - 1), prim(d, depth - 1));
      case 5:
        return tir::FloorMod(prim(d, depth - 1), prim(d, depth - 1));
      case 6:
        return tir::Min(prim(d, depth - 1), prim(d, depth - 1));
      case 7:
        return tir::Max(prim(d, depth - 1), prim(d, depth - 1));
      case 8:
        return tir::Select(prim(DataType::Bool(), depth - 1), prim(d, depth - 1), prim(d, depth - 1));
      case 9:
        return tir::Cast(d, prim(scalar_dtype(), depth - 1));
      case 10:
        return tir::Call(d, chance(2) ? "exp" : "llvm.fma", {prim(d, depth - 1), prim(d, depth - 1)});
      case 11: {
        tir::Var v = new_var(scalar_dtype());
        tir::PrimExpr value = prim(v.dtype(), depth - 1);
        size_t mark = prim_vars_.size(), buffer_mark = buffers_.size();
        prim_vars_.push_back(v);
        tir::PrimExpr body = prim(d, depth - 1);
        prim_vars_.resize(mark);
        buffers_.resize(buffer_mark);
        return tir::Let(v, value, body);
      }
      case 12:
        return load_of(d);
      default:
        return immediate(d);
    }
  }

  tir::Buffer new_buffer(DataType d) {
    std::vector<tir::PrimExpr> shape;
    for (int i = 1 + pick(2); i > 0; --i)
      shape.push_back(chance(3) ? var_of(DataType::Int(64)) : tir::PrimExpr(int64_t{4 + pick(8)}));
    tir::Buffer b(hint(), d, shape, chance(4) ? "local" : "global");
    auto* node = const_cast<tir::BufferNode*>(b.get());
    if (chance(4)) node->strides = Array({var_of(DataType::Int(64)), tir::PrimExpr(int64_t{1})});
    if (chance(4)) node->elem_offset = var_of(DataType::Int(64));
    if (chance(6) && !buffers_.empty()) node->data = buffers_[pick(static_cast<int>(buffers_.size()))]->data;  // alias
    return b;
  }

  tir::PrimExpr load_of(DataType d) {
    tir::Buffer b = buffer_of(d);
    std::vector<tir::PrimExpr> idx;
    for (size_t i = 0; i < b->shape.size(); ++i) idx.push_back(index_expr(1));
    return tir::BufferLoad(b, idx);
  }

  tir::Buffer buffer_of(DataType d) {
    for (const auto& b : buffers_)
      if (b->dtype == d && !chance(4)) return b;
    // Not a parameter: a free buffer.  Its shape may use variables bound
    // here, so it is visible only in the current scope (well-scoped IR).
    tir::Buffer b = new_buffer(d);
    buffers_.push_back(b);
    return b;
  }

  tir::Stmt stmt(int depth) {
    int k = depth <= 0 ? 5 + pick(2) : pick(10);
    switch (k) {
      case 0: {
        tir::Var v = new_var(DataType::Int(64));
        tir::PrimExpr min = index_expr(1), extent = index_expr(1);
        tir::ForKind kind = static_cast<tir::ForKind>(pick(5));
        size_t mark = prim_vars_.size(), buffer_mark = buffers_.size();
        prim_vars_.push_back(v);
        tir::Stmt body = stmt(depth - 1);
        prim_vars_.resize(mark);
        buffers_.resize(buffer_mark);
        Map annotations = chance(3) ? Map({{"pragma", value(1)}}) : Map::empty();
        return tir::For(v, min, extent, kind, body, kind == tir::ForKind::kThreadBinding ? "threadIdx.x" : "",
                        annotations);
      }
      case 1: {
        tir::Buffer b = new_buffer(scalar_dtype());
        size_t mark = buffers_.size();
        buffers_.push_back(b);
        tir::Stmt body = stmt(depth - 1);
        buffers_.resize(mark);
        return tir::Allocate(b, body);
      }
      case 2: {
        tir::Var v = new_var(scalar_dtype());
        tir::PrimExpr value = prim(v.dtype(), depth - 1);
        size_t mark = prim_vars_.size(), buffer_mark = buffers_.size();
        prim_vars_.push_back(v);
        tir::Stmt body = stmt(depth - 1);
        prim_vars_.resize(mark);
        buffers_.resize(buffer_mark);
        return tir::LetStmt(v, value, body);
      }
      case 3:
        return tir::IfThenElse(prim(DataType::Bool(), depth - 1), stmt(depth - 1),
                               chance(2) ? stmt(depth - 1) : tir::Stmt());
      case 4: {
        std::vector<tir::Stmt> seq;
        for (int i = pick(4); i > 0; --i) seq.push_back(stmt(depth - 1));
        if (chance(4)) seq.push_back(tir::SeqStmt({stmt(depth - 1)}));  // nested and single
        return tir::SeqStmt(seq);
      }
      case 5: {
        DataType d = scalar_dtype();
        tir::Buffer b = buffer_of(d);
        std::vector<tir::PrimExpr> idx;
        for (size_t i = 0; i < b->shape.size(); ++i) idx.push_back(index_expr(1));
        return tir::BufferStore(b, prim(d, depth), idx);
      }
      case 6: {
        int k2 = pick(4);
        if (k2 == 0) return tir::Evaluate(tir::Ramp(index_expr(1), immediate(DataType::Int(64)), 2 + pick(7)));
        if (k2 == 1) return tir::Evaluate(tir::Broadcast(prim(scalar_dtype(), 1), 2 + pick(7)));
        if (k2 == 2) return tir::Evaluate(tir::StringImm("msg \"" + hint() + "\"\n"));
        return tir::Evaluate(prim(scalar_dtype(), 2));
      }
      case 7:
        return tir::AttrStmt(chance(2) ? "pragma_unroll" : "odd key", index_expr(1), stmt(depth - 1));
      default:
        return stmt(depth - 1);
    }
  }

  tir::PrimFunc prim_func() {
    prim_vars_.clear();
    free_prim_vars_.clear();
    buffers_.clear();
    std::vector<Any> params;
    for (int i = pick(3); i > 0; --i) {
      tir::Var n = new_var(chance(3) ? DataType::Int(32) : DataType::Int(64));
      prim_vars_.push_back(n);
      params.push_back(n);
    }
    for (int i = pick(3); i > 0; --i) {
      tir::Buffer b = new_buffer(scalar_dtype());
      buffers_.push_back(b);
      params.insert(params.begin() + pick(static_cast<int>(params.size()) + 1), b);
    }
    tir::Stmt body = stmt(2 + size_);
    ir::Type ret = chance(3) ? ir::Type(ir::PrimType(scalar_dtype())) : ir::Type();
    Map attrs = chance(2) ? Map({{"global_symbol", hint()}}) : Map::empty();
    return tir::PrimFunc(params, body, ret, attrs);
  }

  // ---- graph IR ---------------------------------------------------------------
  ir::Type graph_type(int depth) {
    switch (pick(depth > 0 ? 7 : 4)) {
      case 0:
        return ir::PrimType(scalar_dtype());
      case 1: {
        std::vector<Any> dims;
        for (int i = pick(3); i > 0; --i)
          dims.push_back(chance(3) ? var_of(DataType::Int(64)) : tir::PrimExpr(int64_t{1 + pick(64)}));
        return ir::TensorType(Array(dims), scalar_dtype());
      }
      case 2:
        return ir::TensorType(Array(), DataType::Float(32));
      case 3:
        return ir::OpaqueType(chance(2) ? "storage" : "odd \"name\"");
      case 4: {
        std::vector<ir::Type> fields;
        for (int i = pick(3); i > 0; --i) fields.push_back(graph_type(depth - 1));
        return ir::TupleType(fields);
      }
      default: {
        std::vector<ir::Type> params;
        for (int i = pick(3); i > 0; --i) params.push_back(graph_type(depth - 1));
        return ir::FuncType(params, chance(3) ? ir::Type() : graph_type(depth - 1));
      }
    }
  }

  graph::Var graph_var() { return graph::Var(hint(), chance(3) ? ir::Type() : graph_type(1)); }

  ir::Expr graph_leaf() {
    int k = pick(6);
    std::vector<graph::Var> visible = graph_vars_;
    visible.insert(visible.end(), free_graph_vars_.begin(), free_graph_vars_.end());
    if (k <= 2 && !visible.empty()) return visible[pick(static_cast<int>(visible.size()))];
    if (k == 3) {
      runtime::NDArray a = runtime::NDArray::empty({1 + pick(3)}, DataType::Float(32));
      for (int64_t i = 0; i < a->numel(); ++i) a.data_as<float>()[i] = static_cast<float>(pick(1000)) / 7;
      return graph::Constant(a);
    }
    if (k == 4) return ir::GlobalVar(globals_[pick(static_cast<int>(globals_.size()))]);
    graph::Var free = graph_var();  // free: declared at its first use
    free_graph_vars_.push_back(free);
    return free;
  }

  ir::Expr graph(int depth) {
    if (depth <= 0) return graph_leaf();
    switch (pick(9)) {
      case 0: {
        std::vector<ir::Expr> args = {graph(depth - 1), graph(depth - 1)};
        return graph::Call(ir::Op::get("rand.add"), args);
      }
      case 1: {
        std::map<std::string, Any> attrs;
        if (chance(2)) attrs["layout"] = "NHWC";
        if (chance(2)) attrs["alpha"] = 0.5;
        if (chance(2)) attrs["out_dtype"] = DataType::Float(16);
        std::vector<ir::Expr> args;
        for (int i = pick(3); i > 0; --i) args.push_back(graph(depth - 1));
        return graph::Call(ir::Op::get("rand.conv"), args, Map(attrs));
      }
      case 2: {
        ir::Type out = graph_type(1);
        return graph::Call(
            ir::Op::get("call_dps"),
            {ir::GlobalVar(globals_[pick(static_cast<int>(globals_.size()))]), graph::Tuple({graph(depth - 1)})},
            Map::empty(), {out});
      }
      case 3: {
        std::vector<ir::Expr> fields;
        for (int i = pick(4); i > 0; --i) fields.push_back(graph(depth - 1));
        return graph::Tuple(fields);
      }
      case 4:
        return graph::TupleGetItem(graph(depth - 1), pick(3));
      case 5: {
        graph::Var v = graph_var();
        ir::Expr value = graph(depth - 1);
        size_t mark = graph_vars_.size();
        graph_vars_.push_back(v);
        ir::Expr body = graph(depth - 1);
        graph_vars_.resize(mark);
        return graph::Let(v, value, body);
      }
      case 6:
        return graph::If(graph(depth - 1), graph(depth - 1), graph(depth - 1));
      case 7:
        return graph::Call(graph(depth - 1), {graph(depth - 1)});
      default:
        return graph::Call(ir::GlobalVar(globals_[pick(static_cast<int>(globals_.size()))]), {graph(depth - 1)});
    }
  }

  graph::Function graph_func() {
    prim_vars_.clear();
    free_prim_vars_.clear();
    graph_vars_.clear();
    free_graph_vars_.clear();
    std::vector<graph::Var> params;
    for (int i = pick(3); i > 0; --i) {
      params.push_back(graph_var());
      graph_vars_.push_back(params.back());
    }
    ir::Expr body = graph(2 + size_);
    return graph::Function(params, body, chance(3) ? graph_type(1) : ir::Type(),
                           chance(2) ? Map({{"primitive", 1}}) : Map::empty());
  }

  ir::ExternFunc extern_func() {
    prim_vars_.clear();
    free_prim_vars_.clear();
    std::vector<ir::Type> params;
    for (int i = pick(3); i > 0; --i) params.push_back(graph_type(0));
    std::string payload = chance(2) ? "relu:\n  vmaxps %ymm0, %ymm1, %ymm2\n  ret\n" : "AAEC/w==";
    ir::ExternFunc f(chance(2) ? "asm" : "torchscript", payload, ir::FuncType(params, ir::Type()),
                     chance(2) ? "dps" : "packed", chance(2) ? Map({{"isa", "x86_64"}}) : Map::empty());
    if (payload == "AAEC/w==") const_cast<ir::ExternFuncNode*>(f.get())->encoding = "base64";
    return f;
  }

 private:
  std::mt19937 rng_;
  int size_;
  std::vector<std::string> globals_;
  // Bound variables and allocated buffers in scope (restored on leaving a
  // scope); free ones live for the whole function.
  std::vector<tir::Var> prim_vars_, free_prim_vars_;
  std::vector<tir::Buffer> buffers_;
  std::vector<graph::Var> graph_vars_, free_graph_vars_;
};

}  // namespace loom::test

#endif
