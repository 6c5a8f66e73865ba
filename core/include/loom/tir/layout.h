// Buffer layouts (docs/target-llvm.md, "Parameter layouts"): how a
// schedule re-arranges a buffer's elements -- each index of the new layout
// is an axis of the old one, whole or split as the pair `v // c`, `v % c`
// -- so that cache_read can fill a copy in it, transform_layout can make a
// parameter take it, and a compile-time constant can be re-laid out to
// match (relayout).
#ifndef LOOM_TIR_LAYOUT_H_
#define LOOM_TIR_LAYOUT_H_

#include <map>
#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"
#include "loom/tir/function.h"

namespace loom::tir {

// One index of a layout: axis `axis` whole, or its quotient or remainder
// by `factor`.
struct LayoutIndex {
  enum Kind { kWhole, kDiv, kMod } kind;
  int axis;
  int64_t factor;
};
using Layout = std::vector<LayoutIndex>;

// Why `layout` is not a layout of `rank` axes (every axis once, whole or
// as one pair v // c and v % c with c > 0), or "" when it is.
std::string layout_problem(const Layout& layout, size_t rank);

// The new indices of the element at `indices`.
std::vector<PrimExpr> apply_layout(const Layout& layout, const std::vector<PrimExpr>& indices);
// The shape in the layout of a buffer of `shape` (int64 extents; a split
// axis pads to a multiple of its factor).
std::vector<PrimExpr> layout_shape(const Layout& layout, const std::vector<PrimExpr>& shape);
std::vector<int64_t> layout_shape(const Layout& layout, const std::vector<int64_t>& shape);

// The attribute form, "0 // 16, 1, 0 % 16", and back; parse_layout throws
// Error naming the text and what is wrong.
std::string layout_to_string(const Layout& layout);
Layout parse_layout(const std::string& text, size_t rank);

// A prim function's param_layouts attribute (Schedule::transform_layout):
// input position -> layout text; empty without one.
std::map<std::string, std::string> param_layouts(const PrimFuncNode& func);

// A contiguous CPU array re-laid out: element x[i] goes to
// out[apply_layout(i)], padding is zero.
runtime::NDArray relayout(const runtime::NDArray& x, const Layout& layout);

}  // namespace loom::tir

#endif  // LOOM_TIR_LAYOUT_H_
