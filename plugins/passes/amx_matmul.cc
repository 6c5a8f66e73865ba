#include "amx_matmul.h"

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/object/function.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"

namespace loom::passes {

namespace {

bool byte_type(DataType t) {
  return (t.code == DataType::kInt || t.code == DataType::kUInt) && t.bits == 8 && t.lanes == 1;
}

// The fewest rows (the product of a's extents but its last), columns and
// reduction steps a product needs to go to the tiles: below, a tile of 16
// x 16 sums would be mostly padding.  A symbolic row count counts as
// kSymbolicRows rows for min_products.
constexpr int64_t kMinRows = 16, kMinColumns = 16, kMinReduction = 16, kSymbolicRows = 64;

// matmul(a, b) or dense(a, w) as runtime.amx.matmul_packed, or undefined.
ir::Expr offload(const graph::CallNode& original, const graph::CallNode& mutated, int64_t min_products) {
  const auto* op = original.callee.as<ir::OpNode>();
  if (!op || (op->name != "matmul" && op->name != "dense") || original.args.size() != 2) return ir::Expr();
  Map attrs = ir::OpRegistry::check_attrs(op->name, mutated.attrs);
  const auto* at = original.args[0].cast<ir::Expr>()->checked_type.as<ir::TensorTypeNode>();
  const auto* bt = original.args[1].cast<ir::Expr>()->checked_type.as<ir::TensorTypeNode>();
  const auto* ot = original.checked_type.as<ir::TensorTypeNode>();
  if (!at || !bt || !ot || at->unknown_rank() || bt->unknown_rank() || at->shape.size() < 2 || bt->shape.size() != 2)
    return ir::Expr();
  bool bf16 =
      at->dtype == DataType::BFloat16() && bt->dtype == DataType::BFloat16() && ot->dtype == DataType::Float(32);
  bool ints = byte_type(at->dtype) && byte_type(bt->dtype) && ot->dtype == DataType::Int(32);
  if (!bf16 && !ints) return ir::Expr();
  bool transposed = op->name == "dense";
  if (op->name == "matmul") {
    if (attrs.at("transpose_a").as_bool()) return ir::Expr();
    transposed = attrs.at("transpose_b").as_bool();
  }
  std::vector<int64_t> bs;
  for (const Any& d : bt->shape) {
    auto c = graph::constant_dim(d);
    if (!c) return ir::Expr();
    bs.push_back(*c);
  }
  const int64_t K = transposed ? bs[1] : bs[0], N = transposed ? bs[0] : bs[1];
  int64_t rows = 1;
  bool symbolic = false;  // any number of rows
  for (size_t k = 0; k + 1 < at->shape.size(); ++k) {
    auto d = graph::constant_dim(at->shape[k]);
    symbolic = symbolic || !d;
    rows *= d.value_or(1);
  }
  if ((!symbolic && rows < kMinRows) || N < kMinColumns || K < kMinReduction) return ir::Expr();
  if ((symbolic ? kSymbolicRows : rows) * N * K < min_products) return ir::Expr();
  ir::Expr a = mutated.args[0].cast<ir::Expr>(), b = mutated.args[1].cast<ir::Expr>();
  std::string name = "runtime.amx.matmul";
  std::vector<ir::Expr> args;  // numbers as one-element int64 tensors, as call_packed passes them
  // A constant right operand is packed here, once; another per call.
  const auto* c = b.as<graph::ConstantNode>();
  // (A constant the runtime cannot take, on a device or strided, stays.)
  if (c && (c->data->device.device_type != kDLCPU || !c->data->is_contiguous())) return ir::Expr();
  if (c) {
    runtime::NDArray packed =
        FunctionRegistry::get("runtime.amx.pack")(c->data, Any(transposed)).cast<runtime::NDArray>();
    name = "runtime.amx.matmul_packed";
    args = {a, graph::Constant(packed), scalar_constant(DataType::Int(64), N)};
  } else {
    args = {a, b, scalar_constant(DataType::Int(64), int64_t{transposed ? 1 : 0})};
  }
  return graph::Call(ir::Op::get("call_packed"), {graph::Tuple(args)},
                     Map(std::map<std::string, Any>{{"name", Any(name)}}), {original.checked_type});
}

}  // namespace

transform::Pass AMXMatmul() {
  transform::PassInfo info =
      transform::PassInfo::named("AMXMatmul")
          .summary(
              "on a CPU with AMX, matmul and dense of bfloat16 summed in float32 or of 8-bit integers summed in int32, "
              "call the runtime's AMX tile kernel (a constant right operand packed for it at compile time)")
          .opt_level(2)
          .options({SchemaField{"min_products", "int", Any(int64_t{1} << 22),
                                "the fewest multiply-adds (rows x columns x reduction; a symbolic row count as 64 "
                                "rows) a product needs to go to the tiles: a call of the kernel costs about 2 us "
                                "more than the vector kernel with its epilogue fused"}
                        .at_least(0)})
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    const int64_t min_products = context.get_config("AMXMatmul.min_products").as_int();
    return rewrite_graph_bodies(module, [&](const std::string& name, const graph::FunctionNode& f) {
      std::set<std::string> features = target::cpu_features(target::function_target(module, name));
      if (!features.count("amx-tile") || !features.count("amx-bf16") || !features.count("amx-int8")) return f.body;
      return rewrite_calls(f.body, [&](const graph::CallNode& original, const graph::CallNode& mutated) {
        return offload(original, mutated, min_products);
      });
    });
  });
}

}  // namespace loom::passes
