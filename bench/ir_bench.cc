// IR text format and structural hashing on a module of about a million
// nodes, measured against in-run baselines: the reflection-driven JSON
// serializer (the generic way to store the same module) for printing and
// parsing, and std::hash over the module's text (hashing the same
// information as a flat string) for the structural hash.  No other IR
// framework can be installed on this machine, so the peers are these.
//
// Targets: print < 2 s, parse < 2 s, structural hash < 0.5 s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/tir/function.h"

namespace {

using namespace loom;       // NOLINT
using namespace loom::tir;  // NOLINT

// A prim function of `nests` loop nests over (n, 64) buffers, each storing a
// mixed arithmetic expression, and a graph function with a chain of lets
// calling it through call_dps.
ir::IRModule big_module(int nests, int lets) {
  DataType f32 = DataType::Float(32);
  Var n("n", DataType::Int(64));
  Buffer a("A", f32, {n, PrimExpr(int64_t{64})});
  Buffer b("B", f32, {n, PrimExpr(int64_t{64})});
  std::vector<Stmt> seq;
  for (int k = 0; k < nests; ++k) {
    Var i("i", DataType::Int(64)), j("j", DataType::Int(64));
    PrimExpr x = BufferLoad(a, {i, j});
    PrimExpr y = BufferLoad(a, {i, FloorMod(Add(j, PrimExpr(int64_t{k % 7})), PrimExpr(int64_t{64}))});
    PrimExpr value = Div(Sub(Add(Mul(x, FloatImm(f32, 0.5 + k)), FloatImm(f32, 1.25)), Max(y, FloatImm(f32, 0.0))),
                         Select(GT(x, FloatImm(f32, 0.0)), x, FloatImm(f32, 1.0)));
    Stmt store = BufferStore(b, value, {i, j});
    seq.push_back(For(i, PrimExpr(int64_t{0}), n, ForKind::kParallel,
                      For(j, PrimExpr(int64_t{0}), PrimExpr(int64_t{64}), ForKind::kVectorized, store)));
  }
  tir::PrimFunc kernel({a, b, n}, SeqStmt(seq));

  Var batch("batch", DataType::Int(64));
  ir::TensorType t(Array({batch, PrimExpr(int64_t{64})}), f32);
  graph::Var x("x", t);
  std::vector<graph::Var> vars = {x};
  for (int k = 0; k < lets; ++k) vars.push_back(graph::Var("v", t));
  ir::Expr body = vars.back();
  for (int k = lets; k >= 1; --k) {
    ir::Expr call =
        graph::Call(ir::Op::get("call_dps"), {ir::GlobalVar("kernel"), graph::Tuple({vars[k - 1]})}, Map::empty(), {t});
    body = graph::Let(vars[k], call, body);
  }
  graph::Function main({x}, body, t);
  return ir::IRModule({{"kernel", kernel}, {"main", main}});
}

size_t count_nodes(const ir::IRModule& mod) {
  size_t count = 0;
  Visitor v(/*memoize=*/false);
  v.on<Object>([&](const Object* node) {
    ++count;
    v.visit_children(node);
  });
  v.visit(mod);
  return count;
}

using bench::median_ms;

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  ir::IRModule mod = big_module(/*nests=*/12000, /*lets=*/2000);
  size_t nodes = count_nodes(mod);

  std::string text, json;
  ir::IRModule parsed;
  Any loaded;
  double print = median_ms(runs, [&] { text = text::print_module(mod); });
  double save = median_ms(runs, [&] { json = save_json(mod); });
  double parse = median_ms(runs, [&] { parsed = text::parse_module(text, "big.loom"); });
  double load = median_ms(runs, [&] { loaded = load_json(json); });
  uint64_t h = 0;
  size_t text_hash = 0;
  double hash = median_ms(runs, [&] { h = structural_hash(mod); });
  double flat_hash = median_ms(runs, [&] { text_hash = std::hash<std::string>()(text); });
  bool same = structural_equal(mod, parsed) && structural_equal(mod, loaded) && structural_hash(parsed) == h;

  std::printf("IR benchmark: %zu nodes, text %.1f MB, JSON %.1f MB, %d runs each (medians); round trips %s\n", nodes,
              text.size() / 1e6, json.size() / 1e6, runs, same ? "equal" : "DIFFER");
  std::printf("  print text       %8.1f ms | peer save_json      %8.1f ms | ratio %.2f | target < 2000 ms: %s\n", print,
              save, print / save, print < 2000 ? "met" : "MISSED");
  std::printf("  parse text       %8.1f ms | peer load_json      %8.1f ms | ratio %.2f | target < 2000 ms: %s\n", parse,
              load, parse / load, parse < 2000 ? "met" : "MISSED");
  std::printf("  structural hash  %8.1f ms | peer std::hash(text) %7.1f ms | ratio %.2f | target < 500 ms: %s\n", hash,
              flat_hash, hash / flat_hash, hash < 500 ? "met" : "MISSED");
  (void)text_hash;
  return same ? 0 : 1;
}
