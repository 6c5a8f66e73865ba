// Buffer layouts (loom/tir/layout.h).
#include "loom/tir/layout.h"

#include <cstring>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::tir {

std::string layout_problem(const Layout& layout, size_t rank) {
  for (const LayoutIndex& l : layout) {
    if (l.axis < 0 || static_cast<size_t>(l.axis) >= rank)
      return "axis " + std::to_string(l.axis) + " is out of range for " + std::to_string(rank) + " axes";
    if (l.factor <= 0) return "the factor of axis " + std::to_string(l.axis) + " must be positive";
  }
  for (size_t a = 0; a < rank; ++a) {
    std::vector<LayoutIndex> uses;
    for (const LayoutIndex& l : layout)
      if (l.axis == static_cast<int>(a)) uses.push_back(l);
    bool whole = uses.size() == 1 && uses[0].kind == LayoutIndex::kWhole;
    bool split = uses.size() == 2 && uses[0].factor == uses[1].factor && uses[0].kind != LayoutIndex::kWhole &&
                 uses[1].kind != LayoutIndex::kWhole && uses[0].kind != uses[1].kind;
    if (!whole && !split)
      return "axis " + std::to_string(a) + " must appear in the layout once, or as the pair v // c and v % c";
  }
  return "";
}

std::vector<PrimExpr> apply_layout(const Layout& layout, const std::vector<PrimExpr>& indices) {
  std::vector<PrimExpr> out;
  for (const LayoutIndex& l : layout) {
    const PrimExpr& i = indices[l.axis];
    PrimExpr c = IntImm(i.dtype(), l.factor);
    out.push_back(l.kind == LayoutIndex::kWhole ? i
                  : l.kind == LayoutIndex::kDiv ? PrimExpr(FloorDiv(i, c))
                                                : PrimExpr(FloorMod(i, c)));
  }
  return out;
}

std::vector<PrimExpr> layout_shape(const Layout& layout, const std::vector<PrimExpr>& shape) {
  std::vector<PrimExpr> out;
  for (const LayoutIndex& l : layout) {
    PrimExpr extent = Cast(DataType::Int(64), shape[l.axis]);
    PrimExpr c = IntImm(DataType::Int(64), l.factor);
    if (l.kind == LayoutIndex::kWhole) out.push_back(extent);
    if (l.kind == LayoutIndex::kDiv) out.push_back(FloorDiv(Add(extent, IntImm(DataType::Int(64), l.factor - 1)), c));
    if (l.kind == LayoutIndex::kMod) out.push_back(c);
  }
  return out;
}

std::vector<int64_t> layout_shape(const Layout& layout, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out;
  for (const LayoutIndex& l : layout) {
    int64_t extent = shape[l.axis];
    out.push_back(l.kind == LayoutIndex::kWhole ? extent
                  : l.kind == LayoutIndex::kDiv ? (extent + l.factor - 1) / l.factor
                                                : l.factor);
  }
  return out;
}

std::string layout_to_string(const Layout& layout) {
  std::string out;
  for (const LayoutIndex& l : layout) {
    if (!out.empty()) out += ", ";
    out += std::to_string(l.axis);
    if (l.kind == LayoutIndex::kDiv) out += " // " + std::to_string(l.factor);
    if (l.kind == LayoutIndex::kMod) out += " % " + std::to_string(l.factor);
  }
  return out;
}

Layout parse_layout(const std::string& text, size_t rank) {
  Layout out;
  auto fail = [&](const std::string& why) { LOOM_THROW(Error) << "layout '" << text << "': " << why; };
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::istringstream parts(item);
    LayoutIndex l{LayoutIndex::kWhole, -1, 1};
    std::string op;
    if (!(parts >> l.axis)) fail("'" + item + "' is not 'A', 'A // F' or 'A % F'");
    if (parts >> op) {
      if (op != "//" && op != "%") fail("'" + item + "' is not 'A', 'A // F' or 'A % F'");
      l.kind = op == "//" ? LayoutIndex::kDiv : LayoutIndex::kMod;
      if (!(parts >> l.factor)) fail("'" + item + "' has no factor");
    }
    std::string rest;
    if (parts >> rest) fail("unexpected '" + rest + "' in '" + item + "'");
    out.push_back(l);
  }
  if (std::string why = layout_problem(out, rank); !why.empty()) fail(why);
  return out;
}

std::map<std::string, std::string> param_layouts(const PrimFuncNode& func) {
  std::map<std::string, std::string> out;
  if (!func.attrs.contains("param_layouts")) return out;
  const auto* entries = func.attrs.at("param_layouts").as_object_ref().as<MapNode>();
  if (!entries) LOOM_THROW(Error) << "the attribute param_layouts must be a map of input positions to layouts";
  for (const auto& [input, layout] : entries->items) out[input] = layout.as_string();
  return out;
}

runtime::NDArray relayout(const runtime::NDArray& x, const Layout& layout) {
  std::vector<int64_t> shape = x.shape_vector();
  if (std::string why = layout_problem(layout, shape.size()); !why.empty()) LOOM_THROW(Error) << "relayout: " << why;
  if (!x->is_contiguous()) LOOM_THROW(Error) << "relayout: the array is not contiguous";
  std::vector<int64_t> out_shape = layout_shape(layout, shape);
  runtime::NDArray out = runtime::NDArray::zeros(out_shape, x->dtype);  // the padding is zero
  size_t element = (x->dtype.bits * x->dtype.lanes + 7) / 8;
  // Strides of the new layout, then every source element in order, its
  // index counted like an odometer.
  size_t rank = shape.size(), out_rank = out_shape.size();
  std::vector<int64_t> stride(out_rank, 1);
  for (size_t k = out_rank; k-- > 1;) stride[k - 1] = stride[k] * out_shape[k];
  std::vector<int64_t> index(rank, 0);
  const char* src = static_cast<const char*>(x->data());
  char* dst = out.data_as<char>();
  for (int64_t n = 0, total = x->numel(); n < total; ++n) {
    int64_t offset = 0;
    for (size_t k = 0; k < out_rank; ++k) {
      const LayoutIndex& l = layout[k];
      int64_t v = index[l.axis];
      offset += stride[k] * (l.kind == LayoutIndex::kWhole ? v
                             : l.kind == LayoutIndex::kDiv ? v / l.factor
                                                           : v % l.factor);
    }
    std::memcpy(dst + offset * element, src + n * element, element);
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < shape[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

}  // namespace loom::tir
