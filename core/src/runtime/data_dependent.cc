// Registry functions whose results have shapes the data decides
// (docs/runtime.md, "Shapes the data decides"): graph functions reach them
// through call_packed with a result type over a variable no parameter
// binds, which the VM binds from what they return.  Also detection's
// RoiAlign, whose regions usually come from such a result.  Host tensors
// only.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "loom/object/function.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/error.h"
#include "loom/support/size.h"

namespace loom::runtime {
namespace {

const NDArrayNode& host_tensor(const NDArray& x, const char* function, const char* what) {
  if (!x.defined()) LOOM_THROW(TypeError) << function << ": " << what << " is not a tensor";
  const NDArrayNode& a = *x.get();
  if (a.device.device_type != kDLCPU) {
    LOOM_THROW(Error) << function << ": " << what << " is on " << a.device.to_string() << "; it runs on the host";
  }
  if (!a.is_contiguous()) LOOM_THROW(Error) << function << ": " << what << " is not contiguous";
  return a;
}

// Calls f with a null pointer of the C++ type of `dtype`'s elements.
template <class F>
void with_element_type(DataType dtype, const char* function, F&& f) {
  if (dtype.lanes == 1) {
    switch (dtype.code) {
      case DataType::kFloat:
        if (dtype.bits == 32) return f(static_cast<float*>(nullptr));
        if (dtype.bits == 64) return f(static_cast<double*>(nullptr));
        break;
      case DataType::kInt:
        if (dtype.bits == 8) return f(static_cast<int8_t*>(nullptr));
        if (dtype.bits == 16) return f(static_cast<int16_t*>(nullptr));
        if (dtype.bits == 32) return f(static_cast<int32_t*>(nullptr));
        if (dtype.bits == 64) return f(static_cast<int64_t*>(nullptr));
        break;
      case DataType::kUInt:
        if (dtype.bits == 8) return f(static_cast<uint8_t*>(nullptr));
        if (dtype.bits == 16) return f(static_cast<uint16_t*>(nullptr));
        if (dtype.bits == 32) return f(static_cast<uint32_t*>(nullptr));
        if (dtype.bits == 64) return f(static_cast<uint64_t*>(nullptr));
        break;
      case DataType::kBool:
        return f(static_cast<uint8_t*>(nullptr));
      default:
        break;
    }
  }
  LOOM_THROW(TypeError) << function << " does not take " << dtype.to_string() << " tensors";
}

// nonzero(x): the indices of x's nonzero elements, int64 (rank, count),
// in row-major order (numpy.nonzero stacked; a 0-d x counts as 1-D).
// A floating-point element is zero when every bit but the sign is.
NDArray nonzero(const NDArray& x) {
  const NDArrayNode& a = host_tensor(x, "runtime.nonzero", "the input");
  if (a.dtype.lanes != 1 || a.dtype.bits % 8 != 0 || a.dtype.bits > 64) {
    LOOM_THROW(TypeError) << "runtime.nonzero does not take " << a.dtype.to_string() << " tensors";
  }
  const size_t bytes = a.dtype.bits / 8;
  const bool floating = a.dtype.code == DataType::kFloat || a.dtype.code == DataType::kBFloat;
  const uint64_t mask = (bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1) >>
                        (floating ? 1 : 0);  // little-endian: the sign is the top bit
  std::vector<int64_t> dims = x.shape_vector();
  if (dims.empty()) dims.push_back(1);
  const int64_t n = a.numel();
  const auto* data = static_cast<const unsigned char*>(a.data());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, data + i * bytes, bytes);
    if (v & mask) hits.push_back(i);
  }
  const auto rank = static_cast<int64_t>(dims.size()), count = static_cast<int64_t>(hits.size());
  NDArray out = NDArray::empty({rank, count}, DataType::Int(64));
  int64_t* o = out.data_as<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t flat = hits[j];
    for (int64_t d = rank - 1; d >= 0; --d) {
      o[d * count + j] = flat % dims[d];
      flat /= dims[d];
    }
  }
  return out;
}

// unique(x, axis, sorted): the distinct elements of x (axis < 0: x
// flattened) or its distinct slices along axis, as ONNX's Unique and
// numpy.unique: (values, first index of each, inverse indices, counts);
// sorted ascending (slices lexicographically), else in the order of first
// appearance.
// The order unique() gives its groups in: ascending, by first
// appearance, or runs of equal neighbours (PyTorch's unique_consecutive:
// a value that comes back is a group again).
enum class UniqueOrder : int64_t { kFirstAppearance = 0, kSorted = 1, kConsecutive = 2 };

Array unique(const NDArray& x, int64_t axis, UniqueOrder order_kind) {
  const NDArrayNode& a = host_tensor(x, "runtime.unique", "the input");
  std::vector<int64_t> dims = x.shape_vector();
  const bool flat = axis < 0;
  if (!flat && axis >= static_cast<int64_t>(dims.size())) {
    LOOM_THROW(Error) << "runtime.unique: axis " << axis << " of a " << dims.size() << "-D tensor";
  }
  int64_t outer = 1, length = a.numel(), inner = 1;
  if (!flat) {
    length = dims[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  }
  const size_t element = a.dtype.bits / 8;
  std::vector<int64_t> order(length);
  std::iota(order.begin(), order.end(), 0);
  // less(i, j): slice i before slice j; equal by value (0.0 == -0.0).
  std::function<bool(int64_t, int64_t)> less, equal;
  with_element_type(a.dtype, "runtime.unique", [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* p = static_cast<const T*>(a.data());
    auto compare = [p, outer, length, inner](int64_t i, int64_t j) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t k = 0; k < inner; ++k) {
          T u = p[(o * length + i) * inner + k], v = p[(o * length + j) * inner + k];
          if (u < v) return -1;
          if (v < u) return 1;
        }
      }
      return 0;
    };
    less = [compare](int64_t i, int64_t j) { return compare(i, j) < 0; };
    equal = [compare](int64_t i, int64_t j) { return compare(i, j) == 0; };
  });
  if (order_kind != UniqueOrder::kConsecutive) std::stable_sort(order.begin(), order.end(), less);
  // Groups of equal slices in sorted order (consecutive: in x's order);
  // each group's first index is its smallest (the sort is stable).
  std::vector<int64_t> group_first, group_count, inverse_group(length);
  for (int64_t r = 0; r < length; ++r) {
    if (r == 0 || !equal(order[r - 1], order[r])) {
      group_first.push_back(order[r]);
      group_count.push_back(0);
    }
    ++group_count.back();
    inverse_group[order[r]] = static_cast<int64_t>(group_first.size()) - 1;
  }
  const auto k = static_cast<int64_t>(group_first.size());
  std::vector<int64_t> rank(k);  // output position of each group
  std::iota(rank.begin(), rank.end(), 0);
  if (order_kind == UniqueOrder::kFirstAppearance) {
    std::vector<int64_t> by_first(k);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t g, int64_t h) { return group_first[g] < group_first[h]; });
    for (int64_t r = 0; r < k; ++r) rank[by_first[r]] = r;
  }
  std::vector<int64_t> value_dims = flat ? std::vector<int64_t>{k} : dims;
  if (!flat) value_dims[axis] = k;
  NDArray values = NDArray::empty(value_dims, a.dtype);
  NDArray first = NDArray::empty({k}, DataType::Int(64));
  NDArray inverse = NDArray::empty({length}, DataType::Int(64));
  NDArray counts = NDArray::empty({k}, DataType::Int(64));
  const auto* src = static_cast<const char*>(a.data());
  auto* dst = static_cast<char*>(const_cast<NDArrayNode*>(values.get())->data());
  for (int64_t g = 0; g < k; ++g) {
    int64_t r = rank[g];
    first.data_as<int64_t>()[r] = group_first[g];
    counts.data_as<int64_t>()[r] = group_count[g];
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + ((o * k + r) * inner) * element, src + ((o * length + group_first[g]) * inner) * element,
                  inner * element);
    }
  }
  for (int64_t i = 0; i < length; ++i) inverse.data_as<int64_t>()[i] = rank[inverse_group[i]];
  return Array(std::vector<Any>{values, first, inverse, counts});
}

// non_max_suppression(boxes (B, N, 4), scores (B, C, N), max per class,
// iou threshold, score threshold, center_point_box): ONNX's
// NonMaxSuppression; int64 (count, 3) rows of (batch, class, box).  Per
// batch and class, the boxes scoring above the threshold (-inf: no
// threshold) by descending score (ties: the lower index first), each kept
// unless its IoU with one kept before exceeds the IoU threshold, at most
// `max per class` of them (0: none).  Boxes are corners (y1, x1, y2, x2) in
// either order, or (x, y, width, height) centred when center_point_box is 1.
NDArray non_max_suppression(const NDArray& boxes_in, const NDArray& scores_in, const Any& max_in, const Any& iou_in,
                            const Any& threshold_in, const Any& center_in) {
  const char* fn = "runtime.non_max_suppression";
  const NDArrayNode& b = host_tensor(boxes_in, fn, "the boxes");
  const NDArrayNode& s = host_tensor(scores_in, fn, "the scores");
  std::vector<int64_t> bd = boxes_in.shape_vector(), sd = scores_in.shape_vector();
  if (b.dtype != DataType::Float(32) || s.dtype != DataType::Float(32)) {
    LOOM_THROW(TypeError) << fn << ": boxes and scores must be float32, got " << b.dtype.to_string() << " and "
                          << s.dtype.to_string();
  }
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1]) {
    LOOM_THROW(Error) << fn << ": boxes " << loom::shape_text(bd) << " and scores " << loom::shape_text(sd)
                      << " are not (batch, boxes, 4) and (batch, classes, boxes)";
  }
  const double max_per_class = scalar_value(max_in, std::string(fn) + ": max_output_boxes_per_class");
  const double iou_threshold = scalar_value(iou_in, std::string(fn) + ": iou_threshold");
  const double score_threshold = scalar_value(threshold_in, std::string(fn) + ": score_threshold");
  const bool center_point_box = scalar_value(center_in, std::string(fn) + ": center_point_box") != 0;
  if (iou_threshold < 0 || iou_threshold > 1) {
    LOOM_THROW(Error) << fn << ": iou_threshold " << iou_threshold << " is not in [0, 1]";
  }
  const int64_t batches = bd[0], n = bd[1], classes = sd[1];
  const auto limit = static_cast<int64_t>(std::min<double>(std::max(max_per_class, 0.0), static_cast<double>(n)));
  const float* box = static_cast<const float*>(b.data());
  const float* score = static_cast<const float*>(s.data());
  // Corners (y_min, x_min, y_max, x_max) of each box.
  std::vector<float> corners(batches * n * 4);
  for (int64_t i = 0; i < batches * n; ++i) {
    const float* p = box + i * 4;
    float* c = corners.data() + i * 4;
    if (center_point_box) {
      c[0] = p[1] - p[3] / 2, c[1] = p[0] - p[2] / 2, c[2] = p[1] + p[3] / 2, c[3] = p[0] + p[2] / 2;
    } else {
      c[0] = std::min(p[0], p[2]), c[1] = std::min(p[1], p[3]), c[2] = std::max(p[0], p[2]),
      c[3] = std::max(p[1], p[3]);
    }
  }
  auto overlaps = [&](const float* u, const float* v) {
    float h = std::min(u[2], v[2]) - std::max(u[0], v[0]), w = std::min(u[3], v[3]) - std::max(u[1], v[1]);
    if (h <= 0 || w <= 0) return false;
    float inter = h * w, area_u = (u[2] - u[0]) * (u[3] - u[1]), area_v = (v[2] - v[0]) * (v[3] - v[1]);
    float uni = area_u + area_v - inter;
    if (area_u <= 0 || area_v <= 0 || uni <= 0) return false;
    return inter / uni > iou_threshold;
  };
  std::vector<int64_t> rows;
  std::vector<int64_t> candidates, kept;
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t ci = 0; ci < classes && limit > 0; ++ci) {
      const float* sc = score + (bi * classes + ci) * n;
      candidates.clear();
      for (int64_t i = 0; i < n; ++i) {
        if (std::isinf(score_threshold) && score_threshold < 0 ? !std::isnan(sc[i]) : sc[i] > score_threshold) {
          candidates.push_back(i);
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      kept.clear();
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= limit) break;
        const float* c = corners.data() + (bi * n + i) * 4;
        bool suppressed = std::any_of(kept.begin(), kept.end(),
                                      [&](int64_t j) { return overlaps(corners.data() + (bi * n + j) * 4, c); });
        if (suppressed) continue;
        kept.push_back(i);
        rows.insert(rows.end(), {bi, ci, i});
      }
    }
  }
  NDArray out = NDArray::empty({static_cast<int64_t>(rows.size() / 3), 3}, DataType::Int(64));
  std::copy(rows.begin(), rows.end(), out.data_as<int64_t>());
  return out;
}

// topk(x, k, axis, largest): the k largest (or smallest) elements of x
// along axis and their indices, as ONNX's TopK, for a k known only when
// the model runs: sorted, of equal values the lower index first, NaN
// above every number.  k must not exceed the axis's length.
Array topk(const NDArray& x, int64_t k, int64_t axis, bool largest) {
  const NDArrayNode& a = host_tensor(x, "runtime.topk", "the input");
  std::vector<int64_t> dims = x.shape_vector();
  const auto rank = static_cast<int64_t>(dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) LOOM_THROW(Error) << "runtime.topk: axis " << axis << " of a " << rank << "-D tensor";
  const int64_t length = dims[axis];
  if (k < 0 || k > length) {
    LOOM_THROW(Error) << "runtime.topk: k is " << k << ", but axis " << axis << " has " << length << " elements";
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  dims[axis] = k;
  NDArray values = NDArray::empty(dims, a.dtype), indices = NDArray::empty(dims, DataType::Int(64));
  with_element_type(a.dtype, "runtime.topk", [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* in = static_cast<const T*>(a.data());
    T* v = values.data_as<T>();
    int64_t* idx = indices.data_as<int64_t>();
    std::vector<int64_t> order(length);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* line = in + o * length * inner + i;
        auto before = [&](int64_t p, int64_t q) {
          T x = line[p * inner], y = line[q * inner];
          bool x_nan = x != x, y_nan = y != y;  // NaN (never for integers)
          if (x_nan || y_nan) return x_nan == y_nan ? p < q : (largest ? x_nan : y_nan);
          if (x != y) return largest ? y < x : x < y;
          return p < q;
        };
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          v[at] = line[order[j] * inner];
          idx[at] = order[j];
        }
      }
    }
  });
  return Array(std::vector<Any>{values, indices});
}

// The int64 (or int32) entries of a one-dimensional host tensor.
std::vector<int64_t> int_entries(const NDArray& x, const char* function, const char* what) {
  const NDArrayNode& a = host_tensor(x, function, what);
  std::vector<int64_t> out(a.numel());
  if (a.dtype == DataType::Int(64)) {
    std::copy_n(static_cast<const int64_t*>(a.data()), out.size(), out.begin());
  } else if (a.dtype == DataType::Int(32)) {
    std::copy_n(static_cast<const int32_t*>(a.data()), out.size(), out.begin());
  } else {
    LOOM_THROW(TypeError) << function << ": " << what << " must be int64 or int32, not " << a.dtype.to_string();
  }
  return out;
}

// dims(v): an empty uint8 tensor of shape (v..., 0), whose call's result
// type names the variables the VM binds to v's entries: values the data
// decides used as sizes (a mask resized to its box's size).  An entry
// that is not a size is an error naming it.
NDArray dims(const NDArray& v) {
  std::vector<int64_t> values = int_entries(v, "runtime.dims", "the sizes");
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k] < 0) {
      LOOM_THROW(Error) << "runtime.dims: size " << k << " is " << values[k]
                        << ", and a size cannot be negative (a size computed when the model runs)";
    }
  }
  values.push_back(0);
  return NDArray::empty(values, DataType::UInt(8));
}

// slice(x, starts, ends, axes, steps): ONNX's Slice with bounds known only
// when the model runs: each bound counted from the end when negative and
// clamped to the axis (for a negative step, to [-1, length - 1]).
NDArray slice(const NDArray& x, const NDArray& starts_t, const NDArray& ends_t, const NDArray& axes_t,
              const NDArray& steps_t) {
  const NDArrayNode& a = host_tensor(x, "runtime.slice", "the input");
  std::vector<int64_t> starts = int_entries(starts_t, "runtime.slice", "the starts");
  std::vector<int64_t> ends = int_entries(ends_t, "runtime.slice", "the ends");
  std::vector<int64_t> axes = int_entries(axes_t, "runtime.slice", "the axes");
  std::vector<int64_t> steps = int_entries(steps_t, "runtime.slice", "the steps");
  std::vector<int64_t> dims = x.shape_vector();
  const auto rank = static_cast<int64_t>(dims.size());
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    LOOM_THROW(Error) << "runtime.slice: " << starts.size() << " starts, " << ends.size() << " ends, " << axes.size()
                      << " axes and " << steps.size() << " steps";
  }
  std::vector<int64_t> first(rank, 0), step(rank, 1), count = dims;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank)
      LOOM_THROW(Error) << "runtime.slice: axis " << axes[k] << " of a " << rank << "-D tensor";
    const int64_t n = dims[axis], st = steps[k];
    if (st == 0) LOOM_THROW(Error) << "runtime.slice: a step of 0 (axis " << axis << ")";
    auto clamp = [&](int64_t v, int64_t low, int64_t high) {
      if (v < 0) v = v < -n ? -n - 1 : v + n;  // (kept below the range when it was)
      return std::min(std::max(v, low), high);
    };
    if (st < -(int64_t{1} << 62) || st > (int64_t{1} << 62)) {
      LOOM_THROW(Error) << "runtime.slice: a step of " << st << " (axis " << axis << ")";
    }
    int64_t begin = st > 0 ? clamp(starts[k], 0, n) : clamp(starts[k], 0, n - 1);
    int64_t end = st > 0 ? clamp(ends[k], 0, n) : clamp(ends[k], -1, n - 1);
    first[axis] = begin;
    step[axis] = st;
    count[axis] =
        st > 0 ? std::max<int64_t>(0, (end - begin + st - 1) / st) : std::max<int64_t>(0, (begin - end - st - 1) / -st);
  }
  NDArray out = NDArray::empty(count, a.dtype);
  const size_t element = (a.dtype.bits * a.dtype.lanes + 7) / 8;
  std::vector<int64_t> stride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * dims[d + 1];
  const int64_t total = out->numel();
  const auto* in = static_cast<const char*>(a.data());
  auto* o = out.data_as<char>();
  std::vector<int64_t> index(rank, 0);
  for (int64_t j = 0; j < total; ++j) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d) at += (first[d] + index[d] * step[d]) * stride[d];
    std::memcpy(o + j * element, in + at * element, element);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < count[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// roi_align(x, rois, batch_indices, output_height, output_width,
// sampling_ratio, spatial_scale, half_pixel, max_mode): ONNX's RoiAlign
// (torchvision's roi_align with aligned = half_pixel): per region, the
// average (or maximum) of bilinear samples on a grid in each output bin;
// sampling_ratio 0 makes the grid ceil(region size / output size).
NDArray roi_align(const NDArray& x, const NDArray& rois, const NDArray& batch_indices, int64_t out_h, int64_t out_w,
                  int64_t sampling_ratio, double spatial_scale, bool half_pixel, bool max_mode) {
  const NDArrayNode& a = host_tensor(x, "runtime.roi_align", "the input");
  const NDArrayNode& r = host_tensor(rois, "runtime.roi_align", "the regions");
  std::vector<int64_t> batch = int_entries(batch_indices, "runtime.roi_align", "the batch indices");
  std::vector<int64_t> dims = x.shape_vector(), rdims = rois.shape_vector();
  if (dims.size() != 4 || a.dtype != DataType::Float(32)) {
    LOOM_THROW(TypeError) << "runtime.roi_align takes a float32 (N, C, H, W) input, got " << a.dtype.to_string() << " "
                          << shape_text(dims);
  }
  if (rdims.size() != 2 || rdims[1] != 4 || r.dtype != DataType::Float(32) ||
      static_cast<int64_t>(batch.size()) != rdims[0]) {
    LOOM_THROW(TypeError) << "runtime.roi_align: the regions must be float32 (R, 4) with R batch indices, got "
                          << r.dtype.to_string() << " " << shape_text(rdims) << " and " << batch.size() << " indices";
  }
  if (out_h < 1 || out_w < 1 || sampling_ratio < 0) {
    LOOM_THROW(Error) << "runtime.roi_align: output " << out_h << "x" << out_w << ", sampling ratio " << sampling_ratio;
  }
  const int64_t n = dims[0], c = dims[1], h = dims[2], w = dims[3], regions = rdims[0];
  NDArray out = NDArray::empty({regions, c, out_h, out_w}, DataType::Float(32));
  const auto* in = static_cast<const float*>(a.data());
  const auto* box = static_cast<const float*>(r.data());
  float* o = out.data_as<float>();
  struct Tap {
    int64_t at[4];
    float weight[4];
    bool inside;  // a sample outside the map counts as 0
  };
  std::vector<Tap> taps;
  for (int64_t k = 0; k < regions; ++k) {
    if (batch[k] < 0 || batch[k] >= n) {
      LOOM_THROW(Error) << "runtime.roi_align: region " << k << " names batch " << batch[k] << " of " << n;
    }
    const double offset = half_pixel ? 0.5 : 0.0;
    for (int q = 0; q < 4; ++q) {
      if (!std::isfinite(box[k * 4 + q])) {
        LOOM_THROW(Error) << "runtime.roi_align: region " << k << " has the coordinate " << box[k * 4 + q];
      }
    }
    const double x1 = box[k * 4] * spatial_scale - offset, y1 = box[k * 4 + 1] * spatial_scale - offset;
    double roi_w = box[k * 4 + 2] * spatial_scale - offset - x1, roi_h = box[k * 4 + 3] * spatial_scale - offset - y1;
    if (!half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    // (An inverted region, possible with half_pixel, has no samples: its bins are 0, as torchvision's.)
    auto grid = [&](double size, int64_t out_size) -> int64_t {
      if (sampling_ratio > 0) return sampling_ratio;
      double g = std::ceil(size / static_cast<double>(out_size));
      if (g > 4096)
        LOOM_THROW(Error) << "runtime.roi_align: region " << k << " needs " << g << " samples a side per bin";
      return std::max<int64_t>(0, static_cast<int64_t>(g));
    };
    const int64_t grid_h = grid(roi_h, out_h), grid_w = grid(roi_w, out_w);
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    // The taps of every sample of every bin: the same for each channel.
    taps.clear();
    for (int64_t ph = 0; ph < out_h; ++ph) {
      for (int64_t pw = 0; pw < out_w; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            double y = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
            double xx = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
            Tap t{{0, 0, 0, 0}, {0, 0, 0, 0}, false};
            if (y >= -1.0 && y <= h && xx >= -1.0 && xx <= w) {  // outside: a zero sample
              y = std::max(y, 0.0), xx = std::max(xx, 0.0);
              int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(xx), y_high, x_high;
              if (y_low >= h - 1) {
                y_high = y_low = h - 1;
                y = static_cast<double>(y_low);
              } else {
                y_high = y_low + 1;
              }
              if (x_low >= w - 1) {
                x_high = x_low = w - 1;
                xx = static_cast<double>(x_low);
              } else {
                x_high = x_low + 1;
              }
              const double ly = y - y_low, lx = xx - x_low, hy = 1.0 - ly, hx = 1.0 - lx;
              t = Tap{{y_low * w + x_low, y_low * w + x_high, y_high * w + x_low, y_high * w + x_high},
                      {static_cast<float>(hy * hx), static_cast<float>(hy * lx), static_cast<float>(ly * hx),
                       static_cast<float>(ly * lx)},
                      true};
            }
            taps.push_back(t);
          }
        }
      }
    }
    const int64_t per_bin = grid_h * grid_w;
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = in + (batch[k] * c + ch) * h * w;
      float* dst = o + (k * c + ch) * out_h * out_w;
      for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
        double sum = 0.0, best = -std::numeric_limits<double>::infinity();
        for (int64_t s = 0; s < per_bin; ++s) {
          const Tap& t = taps[bin * per_bin + s];
          if (!t.inside) {
            best = std::max(best, 0.0);
            continue;
          }
          if (max_mode) {
            for (int q = 0; q < 4; ++q) best = std::max(best, static_cast<double>(t.weight[q] * plane[t.at[q]]));
          } else {
            for (int q = 0; q < 4; ++q) sum += t.weight[q] * plane[t.at[q]];
          }
        }
        dst[bin] = static_cast<float>(max_mode ? (per_bin ? best : 0.0) : sum / count);
      }
    }
  }
  return out;
}

const bool registered = [] {
  FunctionRegistry::register_function("runtime.nonzero", Function::typed(nonzero, "runtime.nonzero"),
                                      "nonzero(x): int64 (rank, count), the indices of x's nonzero elements");
  FunctionRegistry::register_function(
      "runtime.unique",
      Function::typed(
          [](NDArray x, Any axis, Any order) {
            const auto kind = static_cast<int64_t>(scalar_value(order, "runtime.unique: the order"));
            if (kind < 0 || kind > 2) {
              LOOM_THROW(Error) << "runtime.unique: the order is 0 (first appearance), 1 (sorted) or 2 (runs of "
                                   "equal neighbours), got "
                                << kind;
            }
            return unique(x, static_cast<int64_t>(scalar_value(axis, "runtime.unique: the axis")),
                          static_cast<UniqueOrder>(kind));
          },
          "runtime.unique"),
      "unique(x, axis, order): (values, first indices, inverse indices, counts); axis -1: x flattened; order 0: "
      "by first appearance, 1: sorted, 2: runs of equal neighbours");
  FunctionRegistry::register_function(
      "runtime.non_max_suppression", Function::typed(non_max_suppression, "runtime.non_max_suppression"),
      "non_max_suppression(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box): "
      "int64 (count, 3) rows of (batch, class, box), as ONNX's NonMaxSuppression");
  FunctionRegistry::register_function(
      "runtime.topk",
      Function::typed(
          [](NDArray x, Any k, Any axis, Any largest) {
            return topk(x, static_cast<int64_t>(scalar_value(k, "runtime.topk: k")),
                        static_cast<int64_t>(scalar_value(axis, "runtime.topk: the axis")),
                        scalar_value(largest, "runtime.topk: largest") != 0);
          },
          "runtime.topk"),
      "topk(x, k, axis, largest): (values, int64 indices), the k largest (smallest) along axis, sorted");
  FunctionRegistry::register_function(
      "runtime.dims", Function::typed(dims, "runtime.dims"),
      "dims(v): an empty uint8 tensor of shape (v..., 0); its result type binds v's entries as dimensions");
  FunctionRegistry::register_function(
      "runtime.slice", Function::typed(slice, "runtime.slice"),
      "slice(x, starts, ends, axes, steps): ONNX's Slice with bounds known when the model runs");
  FunctionRegistry::register_function(
      "runtime.roi_align",
      Function::typed(
          [](NDArray x, NDArray rois, NDArray batch, Any out_h, Any out_w, Any ratio, Any scale, Any half_pixel,
             Any max_mode) {
            auto integer = [](const Any& v, const char* what) { return static_cast<int64_t>(scalar_value(v, what)); };
            return roi_align(x, rois, batch, integer(out_h, "runtime.roi_align: the output height"),
                             integer(out_w, "runtime.roi_align: the output width"),
                             integer(ratio, "runtime.roi_align: the sampling ratio"),
                             scalar_value(scale, "runtime.roi_align: the spatial scale"),
                             integer(half_pixel, "runtime.roi_align: half_pixel") != 0,
                             integer(max_mode, "runtime.roi_align: max") != 0);
          },
          "runtime.roi_align"),
      "roi_align(x, rois, batch_indices, output_height, output_width, sampling_ratio, spatial_scale, half_pixel, "
      "max): float32 (R, C, output_height, output_width), as ONNX's RoiAlign");
  // The join of an if's branches whose shapes differ (docs/frontends.md,
  // "Control flow"): its argument, which the VM checks against the call's
  // result type and binds that type's variables from.
  FunctionRegistry::register_function(
      "runtime.bind_shape", Function::typed([](Any x) { return x; }, "runtime.bind_shape"),
      "bind_shape(x): x; the call's result type names the dimensions the VM binds from it");
  return true;
}();

}  // namespace
}  // namespace loom::runtime
