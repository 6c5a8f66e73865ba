#include "convert_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "graph_util.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/layout.h"

namespace loom::passes {

namespace {
const std::vector<int64_t> kToLast = {0, 2, 3, 1};   // NCHW -> NHWC, OIHW -> OHWI
const std::vector<int64_t> kToFirst = {0, 3, 1, 2};  // NHWC -> NCHW

Array ints(const std::vector<int64_t>& v) { return Array(std::vector<Any>(v.begin(), v.end())); }

ir::Expr call(const std::string& op, const ir::Expr& x, const std::string& key, const std::vector<int64_t>& v) {
  return graph::Call(ir::Op::get(op), {x}, Map({{key, Any(ints(v))}}));
}
ir::Expr transpose(const ir::Expr& x, const std::vector<int64_t>& axes) { return call("transpose", x, "axes", axes); }
ir::Expr reshape(const ir::Expr& x, const std::vector<int64_t>& shape) { return call("reshape", x, "shape", shape); }
// x's first `channels` channels (axis 1): a form's padding dropped.
ir::Expr first_channels(const ir::Expr& x, int64_t channels) {
  return graph::Call(ir::Op::get("slice"), {x},
                     Map({{"begin", Any(ints({0}))}, {"end", Any(ints({channels}))}, {"axes", Any(ints({1}))}}));
}

// Whether a constant's array can be re-laid out here: in host memory and
// compact.  Weights are re-laid out by this pass, once, rather than by a
// transpose call that FoldConstant's reference interpreter evaluates at
// microseconds an element (two minutes for ResNet-18's weights).
bool host_compact(const runtime::NDArray& x) { return x->device.device_type == kDLCPU && x->is_contiguous(); }

const ir::TensorTypeNode* tensor_type(const ir::Expr& e) {
  return e->checked_type.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
}

// The static extents of a value's type, nullopt where one is symbolic.
std::optional<std::vector<int64_t>> static_shape(const ir::Expr& e) {
  const auto* t = tensor_type(e);
  if (!t) return std::nullopt;
  std::vector<int64_t> out;
  for (const Any& d : t->shape) {
    auto c = graph::constant_dim(d);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

// The shape of a rank-4 value whose channels, height and width are
// static; a symbolic batch is -1 (the reshapes infer it).
std::optional<std::vector<int64_t>> image_shape(const ir::Expr& e) {
  const auto* t = tensor_type(e);
  if (!t || t->shape.size() != 4) return std::nullopt;
  std::vector<int64_t> out{graph::constant_dim(t->shape[0]).value_or(-1)};
  for (size_t k = 1; k < 4; ++k) {
    auto c = graph::constant_dim(t->shape[k]);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

// The channels of a rank-4 value (its axis 1), nullopt when not static.
std::optional<int64_t> channels_of(const ir::Expr& e) {
  const auto* t = tensor_type(e);
  return t && t->shape.size() == 4 ? graph::constant_dim(t->shape[1]) : std::nullopt;
}

// Whether a conv2d of `groups` over `channels` input channels with OIHW
// weights of `weights` is depthwise (groups = channels, one input
// channel per group; any channel multiplier).
bool depthwise_conv(int64_t channels, int64_t groups, const std::vector<int64_t>& weights) {
  return groups > 1 && groups == channels && weights.size() == 4 && weights[1] == 1;
}

bool has_attr(const ir::OpDef& def, const std::string& key, const std::string& type = "") {
  for (const auto& f : def.attrs)
    if (f.name == key) return type.empty() || f.type == type;
  return false;
}

// The layout a rank-4 channels-first value takes: channels-last (block 0)
// or NCHW{block}c, blocks of `block` channels with the channel within its
// block innermost (docs/passes.md, ConvertLayout).
struct Form {
  int64_t block = 0;
  // The element order from NCHW (and, for weights, OIHW: the same axes
  // as O I H W), as a tir layout.
  tir::Layout data_layout() const {
    tir::Layout l;
    if (!block) {
      for (int64_t axis : kToLast) l.push_back({tir::LayoutIndex::kWhole, static_cast<int>(axis), 1});
      return l;
    }
    return {{tir::LayoutIndex::kWhole, 0, 1},
            {tir::LayoutIndex::kDiv, 1, block},
            {tir::LayoutIndex::kWhole, 2, 1},
            {tir::LayoutIndex::kWhole, 3, 1},
            {tir::LayoutIndex::kMod, 1, block}};
  }
  std::string data_name() const { return block ? "NCHW" + std::to_string(block) + "c" : "NHWC"; }
  std::string suffix() const { return block ? "_nchwc" : "_nhwc"; }
  // The channels held for `channels`: whole blocks, the last padded.
  int64_t padded(int64_t channels) const { return block ? (channels + block - 1) / block * block : channels; }
  // A value in this form, from its NCHW expression of `shape` (padded
  // with zero channels to whole blocks).
  ir::Expr from_first(ir::Expr x, const std::vector<int64_t>& shape) const {
    if (!block) return transpose(x, kToLast);
    int64_t held = padded(shape[1]);
    if (held > shape[1]) {
      x = graph::Call(ir::Op::get("pad"), {x}, Map({{"pad_width", Any(ints({0, 0, 0, held - shape[1], 0, 0, 0, 0}))}}));
    }
    return transpose(reshape(x, {-1, held / block, block, shape[2], shape[3]}), {0, 1, 3, 4, 2});
  }
  // The NCHW value of `shape` from its expression in this form (its
  // padding channels dropped).
  ir::Expr to_first(const ir::Expr& x, const std::vector<int64_t>& shape) const {
    if (!block) return transpose(x, kToFirst);
    int64_t held = padded(shape[1]);
    ir::Expr out = reshape(transpose(x, {0, 1, 4, 2, 3}), {-1, held, shape[2], shape[3]});
    return held == shape[1] ? out : first_channels(out, shape[1]);
  }
};

// A value converted: its expression in `form`, and, where the form pads
// its channels, what every padding channel holds: `pad`, a scalar, or
// undefined where that is not known (a pool's result: finite, varying).
// Padding channels are never NaN or infinite, so the zero weights a
// convolution gives them cancel them exactly.
struct Formed {
  ir::Expr expr;
  Form form;
  runtime::NDArray pad;
};

// A scalar of `dtype` holding zero.
runtime::NDArray zero_scalar(DataType dtype) {
  runtime::NDArray z = runtime::NDArray::empty({}, dtype);
  std::memset(z.data_as<char>(), 0, z->nbytes());
  return z;
}

// Whether a scalar's value is a finite number; false where its type is
// not one this pass reads (16-bit floats).
bool finite(const runtime::NDArray& x) {
  DataType t = x->dtype;
  if (t.code != DataType::kFloat) return true;
  if (t.bits == 32) return std::isfinite(*x.data_as<float>());
  if (t.bits == 64) return std::isfinite(*x.data_as<double>());
  return false;
}

// Rewrites one function's top-level chain; nullopt when nothing converts.
// `lanes` > 0 converts to channel blocks (NCHW{b}c, b at most `lanes`),
// 0 to channels-last.
class Converter {
 public:
  explicit Converter(int64_t lanes) : lanes_(lanes) {}

  std::optional<ir::Expr> run(const ir::Expr& body) {
    std::vector<graph::Binding> bindings;
    ir::Expr result;
    std::tie(bindings, result) = graph::flatten_chain(body);
    graph::Var result_var("out");
    bool bound_result = false;
    if (result.as<graph::CallNode>()) {
      const_cast<graph::VarNode*>(result_var.get())->checked_type = result->checked_type;
      bindings.push_back({result_var, result});
      result = result_var;
      bound_result = true;
    }
    bool changed = false;
    for (const graph::Binding& b : bindings) changed |= convert(b);
    if (!changed) return std::nullopt;
    if (bound_result) {  // back to a result expression
      result = out_.back().value;
      out_.pop_back();
    }
    return graph::drop_dead_bindings(graph::build_chain(out_, result));
  }

 private:
  // The form for a value of `channels` channels: channels-last, or
  // blocks of the vector's lanes, the last padded with channels of zero
  // weight where the lanes do not divide the channels (72 channels in 5
  // blocks of 16); at most as many channels as lanes make one block of
  // all of them (a 3-channel image: NCHW3c, its pixels' channels
  // together).
  Form form_for(int64_t channels) const {
    if (!lanes_) return Form{};
    return Form{channels <= lanes_ ? channels : lanes_};
  }

  // The form a value already has, else the one its channels get.
  std::optional<Form> form_of(const ir::Expr& e) const {
    auto found = formed_.find(e.get());
    if (found != formed_.end()) return found->second.form;
    auto c = channels_of(e);
    if (!c) return std::nullopt;
    return form_for(*c);
  }

  // Whether the binding was converted (its converted form recorded).
  bool convert(const graph::Binding& b) {
    const auto* call = b.value.as<graph::CallNode>();
    const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
    if (!op) return keep(b);
    auto entry = ir::OpRegistry::entry(op->name);
    if (!entry) return keep(b);
    const ir::OpDef& def = entry->def;
    Map attrs = ir::OpRegistry::check_attrs(op->name, call->attrs);
    std::vector<ir::Expr> args;
    for (const Any& a : call->args) args.push_back(a.cast<ir::Expr>());
    std::string layout_key = has_attr(def, "data_layout") ? "data_layout" : has_attr(def, "layout") ? "layout" : "";
    if (!layout_key.empty()) return sensitive(b, *op, def, args, attrs, layout_key);
    if (op->name == "concat") return concat(b, *op, args, attrs);
    if (op->name == "pad") return pad(b, *op, args, attrs);
    if (def.pattern == ir::PatternKind::kReduction && has_attr(def, "axis", "Array") &&
        has_attr(def, "keepdims", "bool"))
      return reduce(b, *op, args, attrs);
    bool agnostic = (def.pattern == ir::PatternKind::kElementwise || def.pattern == ir::PatternKind::kBroadcast) &&
                    !has_attr(def, "axes") && !has_attr(def, "shape");
    if (!agnostic) return keep(b);
    bool any_formed = false;
    for (const ir::Expr& a : args) any_formed |= formed_.count(a.get()) > 0;
    if (!any_formed) return keep(b);
    auto out_channels = channels_of(b.var);
    if (!out_channels || !image_shape(b.var)) return keep(b);
    // The result's form: that of a converted argument of as many
    // channels (so a chain keeps its blocks), else its channels'.
    Form form = form_for(*out_channels);
    for (const ir::Expr& a : args) {
      auto found = formed_.find(a.get());
      if (found != formed_.end() && channels_of(a) == out_channels) {
        form = found->second.form;
        break;
      }
    }
    if (has_attr(def, "axis")) {  // batch_norm-like: the channel axis moves
      if (form.block || def.pattern != ir::PatternKind::kBroadcast || !formed_.count(args[0].get())) return keep(b);
      int64_t axis = attrs.at("axis").as_int();
      if (axis != 1 && axis != -3) return keep(b);
      for (size_t i = 1; i < args.size(); ++i)
        if (formed_.count(args[i].get())) return keep(b);
      args[0] = in_form(args[0], form);
      return emit(b, *op, args, with_attrs(call->attrs, {{"axis", Any(int64_t{3})}}), form, runtime::NDArray());
    }
    // What each argument holds in the result's padding channels (where
    // the form pads them): a scalar to evaluate the operator on.
    bool pads = form.padded(*out_channels) > *out_channels;
    std::vector<ir::Expr> pad_args;
    for (ir::Expr& a : args) {
      const auto* t = tensor_type(a);
      if (!t) return keep(b);
      const auto* c = a.as<graph::ConstantNode>();
      // A constant of one element is that element everywhere.
      bool one_element = c && host_compact(c->data) && c->data->numel() == 1;
      if (pads && one_element) pad_args.push_back(graph::Constant(c->data.view({})));
      if (t->shape.size() == 0) {
        if (pads && !c) return keep(b);  // a parameter scalar: its value unknown here
        continue;
      }
      if (t->shape.size() > 4) return keep(b);
      auto shape = static_shape(a);
      if (!shape && t->shape.size() < 4) return keep(b);
      // Leading 1s to rank 4; a broadcast one channel takes a block of 1.
      std::vector<int64_t> padded(4 - t->shape.size(), 1);
      if (shape) padded.insert(padded.end(), shape->begin(), shape->end());
      if (t->shape.size() == 4 && !image_shape(a)) return keep(b);
      int64_t channels = t->shape.size() == 4 ? channels_of(a).value_or(-1) : padded[1];
      if (channels != *out_channels && channels != 1) return keep(b);
      Form f = channels == 1 && form.block ? Form{1} : form;
      if (pads && !one_element) {
        // One channel broadcast over the padding: its values vary.
        if (channels == 1) return keep(b);
        auto found = formed_.find(a.get());
        bool recorded = found != formed_.end() && found->second.form.block == f.block;
        if (recorded && !found->second.pad.defined()) return keep(b);
        // Converted here, or a constant re-laid out: zero padding.
        pad_args.push_back(graph::Constant(recorded ? found->second.pad : zero_scalar(t->dtype)));
      }
      if (t->shape.size() == 4) {
        a = in_form(a, f);
        continue;
      }
      if (c && host_compact(c->data)) {  // a bias: re-laid out here
        a = graph::Constant(tir::relayout(c->data.view(padded), f.data_layout()));
      } else if (!f.block) {  // to rank 4 in the channels-last order at once
        std::vector<int64_t> shape;
        for (int64_t axis : kToLast) shape.push_back(padded[axis]);
        a = reshape(a, shape);
      } else {
        a = f.from_first(reshape(a, padded), padded);
      }
    }
    runtime::NDArray pad;
    if (pads) {  // the operator on what its arguments' padding holds, at compile time
      ir::Expr value = evaluate_call(*call, pad_args);
      const auto* v = value.defined() ? value.as<graph::ConstantNode>() : nullptr;
      if (!v || v->data->numel() != 1 || !finite(v->data)) return keep(b);  // 0 / 0, log(0): not padded
      pad = v->data;
    }
    return emit(b, *op, args, call->attrs, form, pad);
  }

  // A call of an operator with a layout attribute (conv2d, the pools).
  bool sensitive(const graph::Binding& b, const ir::OpNode& op, const ir::OpDef& def, std::vector<ir::Expr> args,
                 const Map& attrs, const std::string& layout_key) {
    if (args.empty() || attrs.at(layout_key).as_string() != "NCHW") return keep(b);
    const std::optional<int64_t> in = channels_of(args[0]);
    if (!in || !image_shape(args[0]) || !image_shape(b.var)) return keep(b);
    Form form = *form_of(args[0]), out_form = form;
    std::map<std::string, Any> changes;
    // A pool's padding channels: finite, varying; a convolution's: zero
    // (its weights there are).
    runtime::NDArray pad;
    if (has_attr(def, "kernel_layout")) {
      if (attrs.at("kernel_layout").as_string() != "OIHW" || args.size() < 2) return keep(b);
      auto w = static_shape(args[1]);
      auto out = channels_of(b.var);
      if (!w || w->size() != 4 || !out) return keep(b);
      int64_t groups = has_attr(def, "groups") ? attrs.at("groups").as_int() : 1;
      if (!form.block) {
        args[1] = in_form(args[1], form);  // OIHW -> OHWI is NCHW -> NHWC
        changes["kernel_layout"] = Any(std::string("OHWI"));
      } else {
        // One group: input blocks as the input's, output blocks as the
        // result's channels get; depthwise: the input's blocks for both.
        bool depthwise = depthwise_conv(*in, groups, *w) && *out == *in;
        if (groups != 1 && !depthwise) return keep(b);
        out_form = depthwise ? form : form_for(*out);
        int64_t in_block = depthwise ? 1 : form.block;
        // Padded channels need weights of zero there: a constant's.
        bool padding = form.padded(*in) > *in || out_form.padded(*out) > *out;
        const auto* c = args[1].as<graph::ConstantNode>();
        if (padding && !(c && host_compact(c->data))) return keep(b);
        if (depthwise) changes["groups"] = Any(form.padded(*in));
        args[1] = weights(args[1], *w, {in_block, out_form.block});
        pad = zero_scalar(tensor_type(b.var)->dtype);
        changes["kernel_layout"] = Any("OIHW" + std::to_string(in_block) + "i" + std::to_string(out_form.block) + "o");
      }
    }
    changes[layout_key] = Any(form.data_name());
    args[0] = in_form(args[0], form);
    const auto* call = b.value.as<graph::CallNode>();
    return emit(b, op, args, with_attrs(call->attrs, changes), out_form, pad);
  }

  // OIHW weights of `shape` as OIHW{i}i{o}o (blocks {i, o}): a host
  // constant re-laid out here, another value by a reshape and transpose.
  ir::Expr weights(const ir::Expr& w, const std::vector<int64_t>& shape, std::pair<int64_t, int64_t> blocks) {
    auto [bi, bo] = blocks;
    const auto* c = w.as<graph::ConstantNode>();
    if (c && host_compact(c->data)) {
      return graph::Constant(tir::relayout(c->data, {{tir::LayoutIndex::kDiv, 0, bo},
                                                     {tir::LayoutIndex::kDiv, 1, bi},
                                                     {tir::LayoutIndex::kWhole, 2, 1},
                                                     {tir::LayoutIndex::kWhole, 3, 1},
                                                     {tir::LayoutIndex::kMod, 1, bi},
                                                     {tir::LayoutIndex::kMod, 0, bo}}));
    }
    return transpose(reshape(w, {shape[0] / bo, bo, shape[1] / bi, bi, shape[2], shape[3]}), {0, 2, 4, 5, 3, 1});
  }

  // A concat of rank-4 values, one of them converted (a Fire module's two
  // branches, DenseNet's growing feature maps), joins in the converted
  // form along the mapped axis, so the branches need no transposes back
  // and the result none forth.  Channel blocks join along the channels
  // only where every part is whole blocks (the widest block all divide).
  bool concat(const graph::Binding& b, const ir::OpNode& op, std::vector<ir::Expr> args, const Map& attrs) {
    bool any_formed = false;
    int64_t block = lanes_;
    for (const ir::Expr& a : args) {
      auto c = channels_of(a);
      if (!c || !image_shape(a)) return keep(b);
      any_formed |= formed_.count(a.get()) > 0;
      while (block > 1 && *c % block != 0) block /= 2;
    }
    if (!any_formed) return keep(b);
    int64_t axis = attrs.at("axis").as_int();
    if (axis < -4 || axis > 3) return keep(b);
    if (axis < 0) axis += 4;
    Form form;
    int64_t mapped = axis;
    if (lanes_) {
      // Along the channels: the common block; along another axis (the
      // channels the same): the first converted part's.
      form = axis == 1 ? Form{block} : *form_of(args[0]);
      for (const ir::Expr& a : args)
        if (axis != 1 && formed_.count(a.get())) form = formed_.at(a.get()).form;
    } else {
      mapped = std::find(kToLast.begin(), kToLast.end(), axis) - kToLast.begin();
    }
    for (ir::Expr& a : args) a = in_form(a, form);
    const auto* call = b.value.as<graph::CallNode>();
    return emit(b, op, args, with_attrs(call->attrs, {{"axis", Any(mapped)}}), form, runtime::NDArray());
  }

  // A pad of a converted value's height and width only (QDQToInteger
  // pads bytes with their zero point before a convolution): the same
  // widths on the form's spatial axes.  Its padding channels keep what
  // they held where an edge or a reflection pads; a constant makes them
  // vary (the constant at the new rows and columns).
  bool pad(const graph::Binding& b, const ir::OpNode& op, const std::vector<ir::Expr>& args, const Map& attrs) {
    auto found = args.size() == 1 ? formed_.find(args[0].get()) : formed_.end();
    if (found == formed_.end() || !image_shape(b.var)) return keep(b);
    std::vector<int64_t> w;
    for (const Any& a : attrs.at("pad_width").cast<Array>()) w.push_back(a.as_int());
    if (w.size() != 8 || w[0] || w[1] || w[2] || w[3]) return keep(b);
    Form form = found->second.form;
    std::vector<int64_t> mapped = form.block ? std::vector<int64_t>{0, 0, 0, 0, w[4], w[5], w[6], w[7], 0, 0}
                                             : std::vector<int64_t>{0, 0, w[4], w[5], w[6], w[7], 0, 0};
    runtime::NDArray pad = attrs.at("mode").as_string() == "constant" ? runtime::NDArray() : found->second.pad;
    const auto* call = b.value.as<graph::CallNode>();
    return emit(b, op, {in_form(args[0], form)}, with_attrs(call->attrs, {{"pad_width", Any(ints(mapped))}}), form,
                pad);
  }

  // A reduction over axes (sum, mean, max, min...) of a converted value:
  // over the spatial axes (a global pool written as a mean, as timm's and
  // others' squeeze-and-excitation blocks do) in any form, over the
  // channels too where they are whole (channels-last).  With keepdims
  // the result stays in the form; without, a spatial reduction's (N, C)
  // is the form's (N, C) read in order (blocks: whole ones, sliced).
  bool reduce(const graph::Binding& b, const ir::OpNode& op, std::vector<ir::Expr> args, const Map& attrs) {
    if (args.size() != 1) return keep(b);
    const auto* call = b.value.as<graph::CallNode>();
    auto found = formed_.find(args[0].get());
    auto shape = image_shape(args[0]);
    if (found == formed_.end() || !shape) return keep(b);
    Form form = found->second.form;
    std::vector<bool> reduced(4, false);
    Array axes = attrs.at("axis").cast<Array>();
    for (const Any& a : axes) {
      int64_t axis = a.as_int();
      if (axis < -4 || axis > 3) return keep(b);
      reduced[axis < 0 ? axis + 4 : axis] = true;
    }
    if (axes.size() == 0 || reduced[0]) return keep(b);  // over everything, or the batch
    if (reduced[1] && form.block) return keep(b);        // over blocks and the lanes in them
    bool keepdims = attrs.at("keepdims").as_bool();
    if (!keepdims && !(reduced[2] && reduced[3] && !reduced[1])) return keep(b);
    // The axes in the form's order: channels-last moves them; blocks keep
    // H and W where they are.
    std::vector<int64_t> mapped;
    for (int64_t axis = 1; axis < 4; ++axis) {
      if (!reduced[axis]) continue;
      mapped.push_back(form.block ? axis : std::find(kToLast.begin(), kToLast.end(), axis) - kToLast.begin());
    }
    std::sort(mapped.begin(), mapped.end());
    // The padding channels' result: the reduction of what they hold,
    // evaluated at compile time over one channel of the input's extents.
    runtime::NDArray pad;
    int64_t channels = (*shape)[1];
    if (form.padded(channels) > channels && found->second.pad.defined()) {
      const runtime::NDArray& p = found->second.pad;
      runtime::NDArray plane = runtime::NDArray::empty({1, 1, (*shape)[2], (*shape)[3]}, p->dtype);
      for (int64_t i = 0; i < plane->numel(); ++i)
        std::memcpy(plane.data_as<char>() + i * p->nbytes(), p.data_as<char>(), p->nbytes());
      ir::Expr value = evaluate_call(*call, {graph::Constant(plane)});
      const auto* v = value.defined() ? value.as<graph::ConstantNode>() : nullptr;
      if (v && host_compact(v->data) && v->data->numel() == 1 && finite(v->data)) pad = v->data.view({});
    }
    Map changed = with_attrs(call->attrs, {{"axis", Any(ints(mapped))}});
    args[0] = found->second.expr;
    if (keepdims) return emit(b, op, args, changed, form, pad);
    // (N, C): channels-last's result as it is; blocks' (N, C/b, b) reshaped,
    // its padding sliced off.
    graph::Var formed(b.var->name + form.suffix());
    out_.push_back({formed, graph::Call(ir::Op::get(op.name), args, changed)});
    ir::Expr out = formed;
    if (form.block) {
      int64_t held = form.padded(channels);
      out = reshape(out, {-1, held});
      if (held > channels) out = first_channels(out, channels);
    }
    out_.push_back({b.var, out});
    return true;
  }

  bool keep(const graph::Binding& b) {
    out_.push_back(b);
    return false;
  }

  // `let %v_nhwc = op(args); let %v = <back to NCHW>(%v_nhwc)`.
  bool emit(const graph::Binding& b, const ir::OpNode& op, const std::vector<ir::Expr>& args, const Map& attrs,
            const Form& form, const runtime::NDArray& pad) {
    graph::Var formed(b.var->name + form.suffix());
    out_.push_back({formed, graph::Call(ir::Op::get(op.name), args, attrs)});
    out_.push_back({b.var, form.to_first(formed, *image_shape(b.var))});
    formed_[b.var.get()] = {formed, form, pad};
    return true;
  }

  // A rank-4 value in `form`: recorded, a re-laid-out constant, or the
  // conversion from NCHW (bound once for a variable, so its users share
  // it).  A value recorded in another form is converted from its NCHW
  // binding.
  ir::Expr in_form(const ir::Expr& e, const Form& form) {
    auto found = formed_.find(e.get());
    if (found != formed_.end() && found->second.form.block == form.block) return found->second.expr;
    auto key = std::make_pair(e.get(), form.block);
    if (auto again = converted_.find(key); again != converted_.end()) return again->second;
    ir::Expr out;
    if (const auto* c = e.as<graph::ConstantNode>(); c && host_compact(c->data) && c->data->shape.size() == 4) {
      out = graph::Constant(tir::relayout(c->data, form.data_layout()));
    } else {
      ir::Expr converted = form.from_first(e, *image_shape(e));
      const auto* var = e.as<graph::VarNode>();
      if (!var) return converted;
      graph::Var bound(var->name + form.suffix());
      out_.push_back({bound, converted});
      out = bound;
    }
    if (found == formed_.end() && form.block == form_for(channels_of(e).value_or(0)).block)
      formed_[e.get()] = {out, form, zero_scalar(tensor_type(e)->dtype)};
    converted_[key] = out;
    return out;
  }

  int64_t lanes_;
  std::vector<graph::Binding> out_;
  std::unordered_map<const Object*, Formed> formed_;  // value -> its converted variable
  std::map<std::pair<const Object*, int64_t>, ir::Expr> converted_;
};
// Whether a function body has a depthwise convolution (groups = input
// channels, one input channel per group): where channel blocks pay
// (docs/passes.md, ConvertLayout).
bool has_depthwise(const ir::Expr& body) {
  bool found = false;
  for (const graph::Binding& b : graph::flatten_chain(body).first) {
    const auto* call = b.value.as<graph::CallNode>();
    const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
    if (!op || op->name != "conv2d" || call->args.size() != 2) continue;
    Map attrs = ir::OpRegistry::check_attrs(op->name, call->attrs);
    auto channels = channels_of(call->args[0].cast<ir::Expr>());
    auto w = static_shape(call->args[1].cast<ir::Expr>());
    int64_t groups = attrs.at("groups").as_int();
    found = found || (channels && w && depthwise_conv(*channels, groups, *w));
  }
  return found;
}
}  // namespace

transform::Pass ConvertLayout() {
  transform::PassInfo info =
      transform::PassInfo::named("ConvertLayout")
          .summary(
              "channels-first (NCHW) convolutions and pools, and the elementwise ops between them, to channels-last "
              "(NHWC) or channel blocks (NCHW{b}c)")
          .opt_level(1)
          .options({SchemaField{"layout", "str", Any(std::string("auto")),
                                "NHWC (channels-last), NCHWc (blocks of the target's vector lanes), or auto: NCHWc "
                                "for a function with a depthwise convolution, NHWC for the others"}
                        .one_of({"auto", "NHWC", "NCHWc"})})
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    std::string layout = context.get_config("ConvertLayout.layout").as_string();
    return rewrite_graph_bodies(module, [&](const std::string& name, const graph::FunctionNode& f) {
      int64_t lanes = 0;
      if (layout == "NCHWc" || (layout == "auto" && has_depthwise(f.body))) {
        target::Target t = target::function_target(module, name);
        lanes = std::max<int64_t>(1, (t.defined() ? target::vector_bits(t) : 128) / 32);
      }
      return Converter(lanes).run(f.body).value_or(f.body);
    });
  });
}

}  // namespace loom::passes
