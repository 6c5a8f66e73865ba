// NDArray: a tensor described by a DLPack DLTensor (docs/runtime.md).
//
// The reflected fields (dtype, shape, device) describe it; its data is the
// object's raw-bytes payload, so structural equality, hashing and the
// serializers see it.  Storage is owned (allocated through the device's
// DeviceAPI), shared with a source array (a view), or borrowed from a DLPack
// producer (released through its deleter).
#ifndef LOOM_RUNTIME_NDARRAY_H_
#define LOOM_RUNTIME_NDARRAY_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/reflection.h"

namespace loom::runtime {

class NDArrayNode : public Object {
 public:
  DataType dtype = DataType::Float(32);
  Array shape;  // of int
  Device device;

  NDArrayNode() = default;
  NDArrayNode(const NDArrayNode&) = delete;
  ~NDArrayNode() override;

  int64_t numel() const;
  size_t nbytes() const;
  void* data() { return static_cast<char*>(tensor_.data) + tensor_.byte_offset; }
  const void* data() const { return static_cast<const char*>(tensor_.data) + tensor_.byte_offset; }
  const DLTensor& dl_tensor() const { return tensor_; }
  bool is_contiguous() const;

  // Allocates storage for the current dtype, shape and device, not
  // initialised.  Throws for a negative dimension or a dtype that is not a
  // whole number of bytes.
  void allocate(size_t alignment = 64);

  LOOM_OBJECT(NDArrayNode, Object, "runtime.NDArray");
  static void reflect(ReflectionBuilder<NDArrayNode>& r);

 private:
  friend class NDArray;
  void sync_tensor();  // tensor_ from dtype, shape and device
  void release();

  DLTensor tensor_{};
  std::vector<int64_t> shape_storage_;
  std::vector<int64_t> strides_storage_;  // empty: compact
  enum class Storage { kNone, kOwned, kView, kDLPack } storage_ = Storage::kNone;
  ObjectPtr<Object> base_;              // kView: the array whose data this shares
  DLManagedTensor* managed_ = nullptr;  // kDLPack: the producer's tensor
};

// A scalar argument of a registry function: a number, or a one-element
// host tensor of int32, int64, float32 or float64 (what a graph constant
// passed through call_packed is).  TypeError naming `what` otherwise.
double scalar_value(const Any& x, const std::string& what);

// Whether `t` is compact row-major (strides NULL, or those of its shape;
// an axis of extent 1, or any axis of an empty tensor, may have any).
bool is_compact(const DLTensor& t);

class NDArray : public ObjectRef {
 public:
  LOOM_OBJECT_REF(NDArray, ObjectRef, NDArrayNode)
  // A new array whose elements are not initialised (as numpy.empty): for
  // outputs a kernel writes completely (docs/runtime.md, "NDArray").
  static NDArray empty(const std::vector<int64_t>& shape, DataType dtype, Device device = Device(),
                       size_t alignment = 64);
  // A new host array of zeros.
  static NDArray zeros(const std::vector<int64_t>& shape, DataType dtype, size_t alignment = 64);
  // Copies `bytes` (exactly nbytes()) into a new host array.
  static NDArray from_bytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& bytes);
  // Takes a DLPack producer's tensor without copying; its deleter runs
  // when the last reference goes.  Throws (after calling the deleter) for a
  // tensor Loom cannot describe.
  static NDArray from_dlpack(DLManagedTensor* managed);
  // Hands this array to a DLPack consumer without copying; it stays alive
  // until the consumer calls the deleter.
  DLManagedTensor* to_dlpack() const;

  // The same data with another shape (same number of bytes; contiguous).
  NDArray view(const std::vector<int64_t>& shape) const;
  // ... and another dtype of the same element size (bool as uint8).
  NDArray view(const std::vector<int64_t>& shape, DataType dtype) const;
  // Describes compact memory that something else owns (an arena, a
  // caller's DLTensor); `owner`, if defined, stays alive as long as the
  // array.  Without an owner the caller keeps the memory valid.
  static NDArray wrap(void* data, const std::vector<int64_t>& shape, DataType dtype, Device device,
                      ObjectRef owner = ObjectRef());
  // As above, sharing `shape` (an Array of int) instead of building one.
  static NDArray wrap_shape(void* data, const Array& shape, DataType dtype, Device device,
                            ObjectRef owner = ObjectRef());
  // Copies `other` (same dtype and shape, any device with an API) into this.
  void copy_from(const NDArray& other) const;
  NDArray copy_to(Device device) const;

  std::vector<int64_t> shape_vector() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(const_cast<NDArrayNode*>(get())->data());
  }
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_NDARRAY_H_
