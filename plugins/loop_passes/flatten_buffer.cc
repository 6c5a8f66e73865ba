#include "flatten_buffer.h"

#include <unordered_map>

#include <loom/arith/simplify.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

namespace {

class Flattener {
 public:
  // Children first: a load or store of a buffer that is not flat, its
  // indices already flattened, goes through the buffer's flat view.
  Stmt run(const Stmt& s) {
    return Rewriter()
        .post_expr([this](const PrimExpr& e) -> PrimExpr {
          const auto* l = e.as<BufferLoadNode>();
          if (!l || is_flat(*l->buffer.get())) return e;
          return BufferLoad(flat_of(l->buffer), {index(l->buffer, l->indices)});
        })
        .post_stmt([this](const Stmt& st) -> Stmt {
          if (const auto* a = st.as<AllocateNode>()) {
            Buffer flat = flat_of(a->buffer);
            return flat.same_as(a->buffer) ? st : Stmt(Allocate(flat, a->body));
          }
          const auto* store = st.as<BufferStoreNode>();
          if (!store || is_flat(*store->buffer.get())) return st;
          return BufferStore(flat_of(store->buffer), store->value, {index(store->buffer, store->indices)});
        })
        .run(s);
  }

 private:
  static bool is_flat(const BufferNode& b) { return b.shape.size() == 1 && b.strides.size() == 0; }

  // The one-dimensional view of `b`: the same memory (data variable,
  // offset, scope), as many elements as b spans.
  Buffer flat_of(const Buffer& b) {
    if (is_flat(*b.get())) return b;
    auto found = flat_.find(b.get());
    if (found != flat_.end()) return found->second;
    std::vector<PrimExpr> shape;
    for (const Any& d : b->shape) shape.push_back(d.cast<PrimExpr>());
    PrimExpr extent = PrimExpr(int64_t{1});
    if (b->strides.size()) {  // the last element's offset + 1
      for (size_t k = 0; k < shape.size(); ++k) {
        PrimExpr stride = b->strides[k].cast<PrimExpr>();
        extent = Add(extent, Mul(Sub(cast64(shape[k]), PrimExpr(int64_t{1})), cast64(stride)));
      }
    } else {
      for (const PrimExpr& d : shape) extent = Mul(extent, cast64(d));
    }
    ObjectPtr<BufferNode> node = copy_buffer(*b.get());
    node->shape = Array(std::vector<Any>{Any(simplify(extent))});
    node->strides = Array(std::vector<Any>{});
    Buffer flat(node);
    flat_.emplace(b.get(), flat);
    return flat;
  }

  static PrimExpr cast64(const PrimExpr& e) {
    return e.dtype() == DataType::Int(64) ? e : PrimExpr(Cast(DataType::Int(64), e));
  }

  // Row-major (or given-stride) linear index.
  static PrimExpr index(const Buffer& b, const Array& index_list) {
    std::vector<PrimExpr> indices;
    for (const Any& i : index_list) indices.push_back(i.cast<PrimExpr>());
    if (indices.size() != b->shape.size()) {
      LOOM_THROW(Error) << "buffer '" << b->name << "' has rank " << b->shape.size() << " but is indexed with "
                        << indices.size() << " indices";
    }
    PrimExpr out = PrimExpr(int64_t{0});
    if (b->strides.size()) {
      for (size_t k = 0; k < indices.size(); ++k)
        out = Add(out, Mul(cast64(indices[k]), cast64(b->strides[k].cast<PrimExpr>())));
    } else {
      for (size_t k = 0; k < indices.size(); ++k)
        out = Add(Mul(out, cast64(b->shape[k].cast<PrimExpr>())), cast64(indices[k]));
    }
    return simplify(out);
  }

  std::unordered_map<const BufferNode*, Buffer> flat_;
};
}  // namespace

transform::Pass FlattenBuffer() {
  transform::PassInfo info = transform::PassInfo::named("FlattenBuffer")
                                 .summary(
                                     "every buffer access becomes one-dimensional: a flat view of the same memory, "
                                     "indexed row-major (or by the buffer's strides)")
                                 .establishes({"buffers_flat"})
                                 .preserves({"*"});
  return transform::prim_pass(
      info,
      [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
        return Flattener().run(f.body);
      },
      target::on_cpu_target);
}

}  // namespace loom::loop
