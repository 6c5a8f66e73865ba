// PairProducts (docs/passes.md): a reduction loop whose every update is
//   C[idx] = C[idx] + int32(x) * int32(y)
// with x and y integers of at most 16 bits (a quantized convolution's or
// matrix product's int32 sums, QDQToInteger's output) takes two of its
// steps at a time:
//   C[idx] = C[idx] + dot2_i16(x(r), y(r), x(r + 1), y(r + 1))
// which x86 computes with one pmaddwd per vector (two multiply-adds per
// int32 lane) where the float-style code took a multiply and an add per
// product.  Where one of x and y is uint8 and the other int8 (a matrix
// product of raw quantized values, MatMulInteger's) and the target
// implements dot4_u8i8 natively (x86 with AVX-512 VNNI or AVX-VNNI), four
// steps at a time:
//   C[idx] = C[idx] + dot4_u8i8(u(r), s(r), .., u(r + 3), s(r + 3))
// one vpdpbusd per vector (four multiply-adds per lane, added to it).
// Integer sums are exact in any order (int32 wraps as before), so the
// result is the same bits.  Likewise a float32 sum of products of
// bfloat16 values, C[idx] + float32(x) * float32(y) (ToMixedPrecision's
// matrix products and convolutions), takes dot2_bf16 (AVX-512 BF16's
// vdpbf16ps: the pair's products added to the lane in one instruction);
// the products are exact, the float32 additions round in the pair's
// order.
//
// A loop qualifies when it is serial or unrolled with a constant extent
// of at least 2, its body is loops (whose bounds do not use its variable),
// sequences and ifs without an else (whose condition does not use it)
// down to stores of that form, no store's index uses its variable, and no
// x or y reads a buffer the body stores.  Its group is 4 where every
// product takes dot4_u8i8 and the extent is at least 4, else 2.  Of
// nested qualifying loops the innermost whose extent is a multiple of its
// group is grouped (the channels of a convolution whose innermost loop is
// a window's 3 taps), else the innermost, the steps past the last whole
// group after the loop as they were.
// Each kind only where the function's target implements its intrinsic
// natively (dot2_i16: llvm; dot4_u8i8: llvm on a CPU with AVX-512 VNNI or
// AVX-VNNI; dot2_bf16: llvm on a CPU with AVX-512 BF16).
#include "pair_products.h"

#include <loom/arith/simplify.h>
#include <loom/object/traversal.h>
#include <loom/target/target.h>
#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/tir/intrinsic.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

namespace {

// x of int32(x), when x is an integer dot2_i16 takes.
std::optional<PrimExpr> narrow_operand(const PrimExpr& e) {
  const auto* c = e.as<CastNode>();
  if (!c || c->dtype.code != DataType::kInt || c->dtype.bits != 32) return std::nullopt;
  DataType t = c->value.dtype();
  if (t.lanes != c->dtype.lanes || !dot2_i16_operand(t)) return std::nullopt;
  return c->value;
}

// x of float32(x), when x is bfloat16.
std::optional<PrimExpr> bf16_operand(const PrimExpr& e) {
  const auto* c = e.as<CastNode>();
  if (!c || c->dtype.code != DataType::kFloat || c->dtype.bits != 32) return std::nullopt;
  DataType t = c->value.dtype();
  if (t.lanes != c->dtype.lanes || t.code != DataType::kBFloat || t.bits != 16) return std::nullopt;
  return c->value;
}

// x of int32(x), when x is an 8-bit integer of `code` (dot4_u8i8's).
std::optional<PrimExpr> byte_operand(const PrimExpr& e, DataType::Code code) {
  auto x = narrow_operand(e);
  if (!x || x->dtype().code != code || x->dtype().bits != 8) return std::nullopt;
  return x;
}

// An update's product: its two operands (for dot4_u8i8 the uint8 one
// first) and the intrinsic that takes `group` of them at a time.
struct Product {
  PrimExpr x, y;
  const char* intrinsic;
};

// The product of an update of a sum PairProducts groups `group` (2 or 4)
// steps at a time with one of the `native` intrinsics, or nothing.
std::optional<Product> product_of(const BufferStoreNode* store, const std::set<std::string>& native, int64_t group) {
  DataType t = store->value.dtype();
  bool ints = t.code == DataType::kInt && t.bits == 32 && native.count(group == 4 ? "dot4_u8i8" : "dot2_i16");
  bool floats = group == 2 && t.code == DataType::kFloat && t.bits == 32 && native.count("dot2_bf16");
  if (!ints && !floats) return std::nullopt;
  auto update = match_reduction_update(store);
  if (!update || update->op != ReduceOp::kAdd) return std::nullopt;
  const auto* mul = update->term.as<MulNode>();
  if (!mul) return std::nullopt;
  if (group == 4) {
    auto u = byte_operand(mul->a, DataType::kUInt), s = byte_operand(mul->b, DataType::kInt);
    if (!u || !s) u = byte_operand(mul->b, DataType::kUInt), s = byte_operand(mul->a, DataType::kInt);
    if (!u || !s) return std::nullopt;
    return Product{*u, *s, "dot4_u8i8"};
  }
  auto operand = ints ? narrow_operand : bf16_operand;
  auto x = operand(mul->a), y = operand(mul->b);
  if (!x || !y) return std::nullopt;
  return Product{*x, *y, ints ? "dot2_i16" : "dot2_bf16"};
}

// The group of `loop` (the file's comment): 4 or 2 where it qualifies, 0
// where it does not.
int64_t group_of(const ForNode* loop, const std::set<std::string>& native) {
  if (loop->for_kind() != ForKind::kSerial && loop->for_kind() != ForKind::kUnrolled) return 0;
  auto extent = const_int(loop->extent);
  if (!extent || *extent < 2) return 0;
  const VarNode* r = loop->loop_var.get();
  std::vector<const BufferStoreNode*> stores;
  bool ok = true;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!ok) return;
    if (const auto* f = s.as<ForNode>()) {
      ok = !uses_var(Any(f->min), r) && !uses_var(Any(f->extent), r);
      walk(f->body);
    } else if (const auto* q = s.as<SeqStmtNode>()) {
      for (const Any& a : q->seq) walk(a.cast<Stmt>());
    } else if (const auto* branch = s.as<IfThenElseNode>()) {
      // A tile's guard against the tail (row < extent): both steps of a pair take it alike.
      ok = !branch->else_case.defined() && !uses_var(Any(branch->condition), r);
      walk(branch->then_case);
    } else if (const auto* st = s.as<BufferStoreNode>()) {
      ok = product_of(st, native, 2).has_value() && !uses_var(Any(st->indices), r);
      stores.push_back(st);
    } else {
      ok = false;
    }
  };
  walk(loop->body);
  if (!ok || stores.empty()) return 0;
  std::set<const Object*> written;
  for (const BufferStoreNode* st : stores) written.insert(st->buffer->data.get());
  for (const BufferStoreNode* st : stores) {
    auto [x, y, intrinsic] = *product_of(st, native, 2);
    bool reads_written = false;
    Visitor loads;
    loads.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      reads_written = reads_written || written.count(l->buffer->data.get());
      loads.visit_children(l);
    });
    loads.visit(Any(x));
    loads.visit(Any(y));
    if (reads_written) return 0;
  }
  bool fours = *extent >= 4;
  for (const BufferStoreNode* st : stores) fours = fours && product_of(st, native, 4).has_value();
  return fours ? 4 : 2;
}

// `loop` (qualifying) `group` steps at a time; the steps past the last
// whole group follow as they were.
Stmt group_steps(const ForNode* loop, const std::set<std::string>& native, int64_t group) {
  int64_t extent = *const_int(loop->extent);
  DataType t = loop->loop_var->dtype;
  Var rg(loop->loop_var->name + (group == 4 ? "_quad" : "_pair"), t);
  PrimExpr first = simplify(Add(loop->min, Mul(PrimExpr(rg), PrimExpr(IntImm(t, group)))));
  const VarNode* r = loop->loop_var.get();
  Stmt body = Rewriter()
                  .post_stmt([&](const Stmt& s) -> Stmt {
                    const auto* st = s.as<BufferStoreNode>();
                    if (!st) return s;
                    auto [x, y, intrinsic] = *product_of(st, native, group);
                    std::vector<PrimExpr> args;
                    for (int64_t k = 0; k < group; ++k) {
                      PrimExpr step = simplify(Add(first, PrimExpr(IntImm(t, k))));
                      args.push_back(simplify(substitute(x, {{r, step}})));
                      args.push_back(simplify(substitute(y, {{r, step}})));
                    }
                    PrimExpr dot = Call(st->value.dtype(), intrinsic, args);
                    std::vector<PrimExpr> indices;
                    for (const Any& i : st->indices) indices.push_back(i.cast<PrimExpr>());
                    return BufferStore(st->buffer, Add(BufferLoad(st->buffer, indices), dot), indices);
                  })
                  .run(loop->body);
  Stmt grouped =
      For(rg, IntImm(t, 0), IntImm(t, extent / group), loop->for_kind(), body, loop->thread, loop->annotations);
  if (extent % group == 0) return grouped;
  std::vector<Stmt> out{grouped};
  for (int64_t k = extent - extent % group; k < extent; ++k) {
    PrimExpr step = simplify(Add(loop->min, PrimExpr(IntImm(t, k))));
    out.push_back(simplify(substitute(fresh_bindings(loop->body), {{r, step}})));
  }
  return seq(out);
}

// Of the qualifying loops in `top` (qualifying itself), the deepest whose
// extent is a multiple of its group, else the deepest; with its group.
std::pair<const ForNode*, int64_t> chosen_loop(const Stmt& top, const std::set<std::string>& native) {
  const ForNode *whole = nullptr, *any = nullptr;
  int64_t whole_group = 0, any_group = 0;
  size_t whole_depth = 0, any_depth = 0;
  std::function<void(const Stmt&, size_t)> walk = [&](const Stmt& s, size_t depth) {
    if (const auto* f = s.as<ForNode>()) {
      if (int64_t group = group_of(f, native)) {
        if (!any || depth > any_depth) any = f, any_depth = depth, any_group = group;
        if (*const_int(f->extent) % group == 0 && (!whole || depth > whole_depth))
          whole = f, whole_depth = depth, whole_group = group;
      }
      walk(f->body, depth + 1);
    } else if (const auto* q = s.as<SeqStmtNode>()) {
      for (const Any& a : q->seq) walk(a.cast<Stmt>(), depth);
    }
  };
  walk(top, 0);
  return whole ? std::pair{whole, whole_group} : std::pair{any, any_group};
}

Stmt pair_products(const Stmt& s, const std::set<std::string>& native) {
  return Rewriter()
      .pre_stmt([&native](const Stmt& st) -> std::optional<Stmt> {
        const auto* top = st.as<ForNode>();
        if (!top || !group_of(top, native)) return std::nullopt;
        auto [chosen, group] = chosen_loop(st, native);
        return Rewriter()
            .pre_stmt([&](const Stmt& s) -> std::optional<Stmt> {
              if (s.get() == chosen) return group_steps(chosen, native, group);
              return std::nullopt;
            })
            .run(st);
      })
      .run(s);
}

}  // namespace

GroupedLoop grouped_loop(const Stmt& s, const std::set<std::string>& native) {
  GroupedLoop out;
  pre_order(s, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    if (out.var || !f || !group_of(f, native)) return !out.var;
    auto [chosen, group] = chosen_loop(st, native);
    out = GroupedLoop{chosen->loop_var.get(), group};
    return false;
  });
  return out;
}

transform::Pass PairProducts() {
  transform::PassInfo info =
      transform::PassInfo::named("PairProducts")
          .summary(
              "integer reductions over products of 8- and 16-bit integers, and float32 ones over products of "
              "bfloat16 values, take two steps at a time, each pair of products one dot2_i16 (x86 pmaddwd) or "
              "dot2_bf16 (AVX-512 BF16 vdpbf16ps), or four of uint8 by int8 one dot4_u8i8 (VNNI vpdpbusd), "
              "where the target implements it")
          .opt_level(2)
          .preserves({"*"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    return module.with_functions(
        transform::rewrite_prim_funcs(module, [&](const std::string& name, const tir::PrimFunc& f) {
          std::set<std::string> native = target::native_intrinsics(target::function_target(module, name));
          if (!native.count("dot2_i16") && !native.count("dot2_bf16")) return f;
          tir::Stmt body = pair_products(f->body, native);
          return body.same_as(f->body) ? f : tir::with_body(*f.get(), body);
        }));
  });
}

}  // namespace loom::loop
