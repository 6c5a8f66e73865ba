#include "loom/runtime/ndarray.h"

#include <cstdlib>
#include <cstring>

namespace loom::runtime {

LOOM_REGISTER_OBJECT(NDArrayNode);

void NDArrayNode::Free::operator()(void* p) const { std::free(p); }

int64_t NDArrayNode::numel() const {
  int64_t n = 1;
  for (const Any& d : shape) n *= d.as_int();
  return n;
}

size_t NDArrayNode::nbytes() const {
  return static_cast<size_t>(numel()) * (dtype.bits / 8) * dtype.lanes;
}

void NDArrayNode::allocate() {
  for (const Any& d : shape) {
    if (d.as_int() < 0) LOOM_THROW(Error) << "NDArray dimension " << d.as_int() << " is negative";
  }
  if (dtype.bits % 8 != 0) {
    LOOM_THROW(Error) << "NDArray of " << dtype.to_string() << ": elements must be a whole number of bytes";
  }
  size_t size = nbytes();
  size_t rounded = (size + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) LOOM_THROW(Error) << "out of memory allocating " << size << " bytes";
  std::memset(p, 0, rounded ? rounded : 64);
  data_.reset(p);
  allocated_ = size;
}

std::string ndarray_bytes(const NDArrayNode& node) {
  return node.data_ ? std::string(static_cast<const char*>(node.data()), node.allocated_) : std::string();
}

void set_ndarray_bytes(NDArrayNode& node, const std::string& bytes) {
  node.allocate();
  if (bytes.size() != node.nbytes()) {
    LOOM_THROW(Error) << "NDArray of " << node.dtype.to_string() << " with " << node.numel() << " elements needs "
                      << node.nbytes() << " bytes, got " << bytes.size();
  }
  if (!bytes.empty()) std::memcpy(node.data(), bytes.data(), bytes.size());
}

void NDArrayNode::reflect(ReflectionBuilder<NDArrayNode>& r) {
  r.field("dtype", &NDArrayNode::dtype).field("shape", &NDArrayNode::shape).field("device", &NDArrayNode::device);
  r.bytes(&ndarray_bytes, &set_ndarray_bytes);
}

NDArray NDArray::empty(const std::vector<int64_t>& shape, DataType dtype) {
  auto node = make_object<NDArrayNode>();
  node->dtype = dtype;
  std::vector<Any> dims(shape.begin(), shape.end());
  node->shape = Array(dims);
  node->allocate();
  return NDArray(node);
}

NDArray NDArray::from_bytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& bytes) {
  NDArray array = empty(shape, dtype);
  set_ndarray_bytes(*const_cast<NDArrayNode*>(array.get()), bytes);
  return array;
}

std::vector<int64_t> NDArray::shape_vector() const {
  std::vector<int64_t> out;
  for (const Any& d : get()->shape) out.push_back(d.as_int());
  return out;
}

}  // namespace loom::runtime
