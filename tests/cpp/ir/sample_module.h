// A module with all three variants, built from scratch on each call (so two
// calls give structurally equal, pointer-distinct modules):
//   @add_one: prim function, B[i] = A[i] + 1 over a vectorized loop
//   @fast_relu: extern "test_asm" function (dps)
//   @main: graph function: relu(add_one(x)) through call_dps, then a tuple
#ifndef LOOM_TESTS_CPP_IR_SAMPLE_MODULE_H_
#define LOOM_TESTS_CPP_IR_SAMPLE_MODULE_H_

#include <cstring>

#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/tir/function.h"

namespace loom::test {

inline tir::PrimFunc sample_prim_func(int64_t n = 16) {
  using namespace loom::tir;  // NOLINT
  DataType f32 = DataType::Float(32);
  Buffer a("A", f32, {PrimExpr(n)});
  Buffer b("B", f32, {PrimExpr(n)});
  Var i("i", DataType::Int(64));
  Stmt store = BufferStore(b, Add(BufferLoad(a, {i}), FloatImm(f32, 1.0)), {i});
  Stmt loop = For(i, PrimExpr(int64_t{0}), PrimExpr(n), ForKind::kVectorized, store);
  return PrimFunc({a, b}, loop, ir::Type(), Map({{"global_symbol", "add_one"}}));
}

// The extern kind the sample uses, registered once per process so that the
// sample is well formed wherever it is used.
inline void ensure_sample_extern_kind() {
  if (!ir::ExternKindRegistry::entry("test_asm")) {
    ir::ExternKindRegistry::register_kind("test_asm", Function::typed([](ObjectRef, std::string) {}),
                                          "the samples' assembly");
  }
}

inline ir::ExternFunc sample_extern_func(int64_t n = 16) {
  ensure_sample_extern_kind();
  ir::TensorType t = tir::tensor_type({n}, DataType::Float(32));
  return ir::ExternFunc("test_asm", "fast_relu:\n  ret\n", ir::FuncType({t, t}, ir::Type()), "dps",
                        Map({{"isa", "x86_64"}}));
}

inline ir::IRModule sample_module(int64_t n = 16) {
  using namespace loom::graph;  // NOLINT
  ir::TensorType t = tir::tensor_type({n}, DataType::Float(32));
  Var x("x", t);
  Var y("y", t);
  Expr call_add = Call(ir::Op::get("call_dps"), {ir::GlobalVar("add_one"), Tuple({x})}, Map::empty(), {t});
  Expr call_relu = Call(ir::Op::get("call_dps"), {ir::GlobalVar("fast_relu"), Tuple({y})}, Map::empty(), {t});
  runtime::NDArray bias = runtime::NDArray::empty({2}, DataType::Float(32));
  bias.data_as<float>()[0] = 0.5f;
  bias.data_as<float>()[1] = -2.0f;
  Expr body = Let(y, call_add, Tuple({call_relu, Constant(bias)}));
  graph::Function main({x}, body, ir::Type(), Map::empty());
  return ir::IRModule({{"main", main}, {"add_one", sample_prim_func(n)}, {"fast_relu", sample_extern_func(n)}},
                      Map({{"target", "llvm"}}));
}

}  // namespace loom::test

#endif
