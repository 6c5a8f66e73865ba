// NDArray: a dense tensor in host memory, the payload of graph constants.
//
// This is the first, host-only form: a data type, a shape and 64-byte
// aligned compact row-major storage.  The runtime issue puts it on DLPack
// (devices, strides, views, zero-copy exchange) behind the same interface.
// The bytes are the object's raw payload, so structural equality, hashing
// and serializers see them (TypeInfo::get_bytes).
#ifndef LOOM_RUNTIME_NDARRAY_H_
#define LOOM_RUNTIME_NDARRAY_H_

#include <cstdint>
#include <memory>
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

  // Number of elements and bytes.
  int64_t numel() const;
  size_t nbytes() const;
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }

  // Allocates (zeroed) storage for the current dtype and shape.
  void allocate();

  LOOM_OBJECT(NDArrayNode, Object, "runtime.NDArray");
  static void reflect(ReflectionBuilder<NDArrayNode>& r);

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t allocated_ = 0;
  friend std::string ndarray_bytes(const NDArrayNode&);
  friend void set_ndarray_bytes(NDArrayNode&, const std::string&);
};

class NDArray : public ObjectRef {
 public:
  LOOM_OBJECT_REF(NDArray, ObjectRef, NDArrayNode)
  // A zero-filled host array; throws Error for a negative dimension or a
  // data type whose bits are not a whole number of bytes.
  static NDArray empty(const std::vector<int64_t>& shape, DataType dtype);
  // Copies `bytes` (exactly nbytes()) into a new array.
  static NDArray from_bytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& bytes);
  std::vector<int64_t> shape_vector() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(const_cast<NDArrayNode*>(get())->data());
  }
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_NDARRAY_H_
