#include "loom/support/size.h"
#include "loom/runtime/ndarray.h"

#include <cstring>

#include "loom/runtime/device_api.h"

namespace loom::runtime {

LOOM_REGISTER_OBJECT(NDArrayNode);

namespace {
DLDataType to_dl(DataType t) { return DLDataType{t.code, t.bits, t.lanes}; }
DLDevice to_dl(Device d) { return DLDevice{static_cast<DLDeviceType>(d.device_type), d.device_id}; }

// The DataType of a DLPack dtype Loom computes on: false for complex,
// opaque handles, sub-byte and unknown codes.
bool dlpack_dtype(DLDataType t, DataType* out) {
  bool known = false;
  switch (t.code) {
    case kDLInt:
    case kDLUInt:
      known = t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
      break;
    case kDLFloat:
      known = t.bits == 16 || t.bits == 32 || t.bits == 64;
      break;
    case kDLBfloat:
      known = t.bits == 16;
      break;
    case DataType::kBool:
      known = t.bits == 8;
      break;  // kDLBool in DLPack 0.8
    default:
      break;
  }
  if (!known || t.lanes < 1) return false;
  *out = DataType(static_cast<DataType::Code>(t.code), t.bits, t.lanes);
  return true;
}

std::string dlpack_dtype_text(DLDataType t) {
  const char* names[] = {"int", "uint", "float", "handle", "bfloat", "complex", "bool"};
  std::string text = t.code < 7
                         ? names[t.code] + std::to_string(t.bits)
                         : "DLPack type code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + "-bit,";
  if (t.lanes != 1) text += "x" + std::to_string(t.lanes);
  return text;
}

size_t element_bytes(DataType t) {
  if (t.bits % 8 != 0) {
    LOOM_THROW(Error) << "NDArray of " << t.to_string() << ": elements must be a whole number of bytes";
  }
  return static_cast<size_t>(t.bits / 8) * t.lanes;
}
}  // namespace

NDArrayNode::~NDArrayNode() { release(); }

void NDArrayNode::release() {
  if (storage_ == Storage::kOwned && tensor_.data) {
    DeviceAPIRegistry::get(device).free(device, tensor_.data);
  } else if (storage_ == Storage::kDLPack && managed_ && managed_->deleter) {
    managed_->deleter(managed_);
  }
  tensor_.data = nullptr;
  managed_ = nullptr;
  base_.reset();
  storage_ = Storage::kNone;
}

int64_t NDArrayNode::numel() const {
  int64_t n = 1;
  for (const Any& d : shape) n *= d.as_int();
  return n;
}

size_t NDArrayNode::nbytes() const { return static_cast<size_t>(numel()) * element_bytes(dtype); }

bool is_compact(const DLTensor& t) {
  if (!t.strides) return true;
  // Strides of an axis of extent 1, and every stride of an empty tensor,
  // address nothing (PyTorch gives an empty tensor strides (1, 1)).
  for (int i = 0; i < t.ndim; ++i)
    if (t.shape[i] == 0) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

bool NDArrayNode::is_contiguous() const { return is_compact(tensor_); }

void NDArrayNode::sync_tensor() {
  shape_storage_.clear();
  shape_storage_.reserve(shape.size());  // one allocation (a VM call wraps hundreds of tensors)
  for (const Any& d : shape) {
    if (d.as_int() < 0) LOOM_THROW(Error) << "NDArray dimension " << d.as_int() << " is negative";
    shape_storage_.push_back(d.as_int());
  }
  tensor_.ndim = static_cast<int32_t>(shape_storage_.size());
  tensor_.shape = shape_storage_.data();
  tensor_.strides = strides_storage_.empty() ? nullptr : strides_storage_.data();
  tensor_.dtype = to_dl(dtype);
  tensor_.device = to_dl(device);
}

void NDArrayNode::allocate(size_t alignment) {
  release();
  std::vector<int64_t> dims;
  for (const Any& d : shape) dims.push_back(d.as_int());
  std::string what = "a " + dtype.to_string() + " tensor";
  size_t bytes = checked_nbytes(dims, element_bytes(dtype), what);  // before the shape reaches DLPack
  sync_tensor();
  DeviceAPI& api = DeviceAPIRegistry::get(device);
  try {
    tensor_.data = api.alloc(device, bytes, alignment);
  } catch (const std::bad_alloc&) {
    tensor_.data = nullptr;
  } catch (const Error& e) {  // the device's reason, with the tensor it was for
    LOOM_THROW(Error) << what << " of shape " << shape_text(dims) << " on " << device.to_string() << ": " << e.what();
  }
  if (!tensor_.data && bytes) {
    LOOM_THROW(Error) << "cannot allocate " << readable_bytes(bytes) << " for " << what << " of shape "
                      << shape_text(dims) << " on " << device.to_string() << ": out of memory";
  }
  tensor_.byte_offset = 0;
  storage_ = Storage::kOwned;
}

namespace {
// The bytes of a host array (compact copy of a strided one); other devices
// are copied to the host first.
std::string ndarray_bytes(const NDArrayNode& node) {
  NDArray self(ObjectPtr<Object>(const_cast<NDArrayNode*>(&node)));
  if (!node.dl_tensor().data) return std::string();
  NDArray host = node.device.device_type == Device::kCPU && node.is_contiguous() ? self : self.copy_to(Device());
  return std::string(static_cast<const char*>(host->data()), host->nbytes());
}

void set_ndarray_bytes(NDArrayNode& node, const std::string& bytes) {
  // The shape (from a file) is checked, and its size compared with the
  // bytes present, before anything is allocated.
  std::vector<int64_t> dims;
  for (const Any& d : node.shape) {
    if (d.kind() != AnyKind::kInt) LOOM_THROW(Error) << "an NDArray dimension is " << d.describe() << ", not an int";
    dims.push_back(d.as_int());
  }
  std::string what = "an NDArray of " + node.dtype.to_string();
  uint64_t want = checked_nbytes(dims, element_bytes(node.dtype), what);
  if (bytes.size() != want) {
    LOOM_THROW(Error) << what << " of shape " << shape_text(dims) << " needs " << want << " bytes, got "
                      << bytes.size();
  }
  node.allocate();
  if (!bytes.empty()) std::memcpy(node.data(), bytes.data(), bytes.size());
}
}  // namespace

void NDArrayNode::reflect(ReflectionBuilder<NDArrayNode>& r) {
  r.field("dtype", &NDArrayNode::dtype).field("shape", &NDArrayNode::shape).field("device", &NDArrayNode::device);
  r.bytes(&ndarray_bytes, &set_ndarray_bytes);
}

NDArray NDArray::empty(const std::vector<int64_t>& shape, DataType dtype, Device device, size_t alignment) {
  auto node = make_object<NDArrayNode>();
  node->dtype = dtype;
  node->shape = Array(std::vector<Any>(shape.begin(), shape.end()));
  node->device = device;
  node->allocate(alignment);
  return NDArray(node);
}

NDArray NDArray::zeros(const std::vector<int64_t>& shape, DataType dtype, size_t alignment) {
  NDArray out = empty(shape, dtype, Device(), alignment);
  if (size_t bytes = out->nbytes()) std::memset(out.data_as<char>(), 0, bytes);
  return out;
}

NDArray NDArray::from_bytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& bytes) {
  NDArray array = empty(shape, dtype);
  set_ndarray_bytes(*const_cast<NDArrayNode*>(array.get()), bytes);
  return array;
}

NDArray NDArray::from_dlpack(DLManagedTensor* managed) {
  if (!managed) LOOM_THROW(Error) << "from_dlpack of a null tensor";
  const DLTensor& t = managed->dl_tensor;
  auto reject = [&](const std::string& why) {
    if (managed->deleter) managed->deleter(managed);
    LOOM_THROW(Error) << "from_dlpack: " << why;
  };
  if (t.ndim < 0 || t.ndim > 64 || (t.ndim > 0 && !t.shape)) reject("the tensor has no shape (or over 64 dimensions)");
  DataType dtype;
  if (!dlpack_dtype(t.dtype, &dtype)) {
    if (managed->deleter) managed->deleter(managed);
    LOOM_THROW(TypeError) << "from_dlpack: " << dlpack_dtype_text(t.dtype)
                          << " elements are not supported (Loom takes bool, int8..int64, uint8..uint64, float16, "
                             "bfloat16, float32 and float64)";
  }
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  try {
    checked_nbytes(shape, static_cast<int>(element_bytes(dtype)), "the tensor");
  } catch (const Error& e) {
    reject(e.what());
  }
  auto node = make_object<NDArrayNode>();
  node->dtype = dtype;
  std::vector<Any> dims;
  for (int i = 0; i < t.ndim; ++i) dims.push_back(t.shape[i]);
  node->shape = Array(dims);
  node->device.device_type = t.device.device_type;
  node->device.device_id = t.device.device_id;
  if (t.strides) node->strides_storage_.assign(t.strides, t.strides + t.ndim);
  node->sync_tensor();
  node->tensor_.data = t.data;
  node->tensor_.byte_offset = t.byte_offset;
  node->managed_ = managed;
  node->storage_ = NDArrayNode::Storage::kDLPack;
  return NDArray(node);
}

namespace {
struct Exported {
  DLManagedTensor managed;
  ObjectPtr<Object> keep_alive;
  std::vector<int64_t> shape, strides;
};
}  // namespace

DLManagedTensor* NDArray::to_dlpack() const {
  auto* exported = new Exported();
  exported->keep_alive = object_ptr();
  const DLTensor& t = get()->dl_tensor();
  exported->shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides) exported->strides.assign(t.strides, t.strides + t.ndim);
  exported->managed.dl_tensor = t;
  exported->managed.dl_tensor.shape = exported->shape.data();
  exported->managed.dl_tensor.strides = t.strides ? exported->strides.data() : nullptr;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); };
  return &exported->managed;
}

NDArray NDArray::view(const std::vector<int64_t>& shape) const { return view(shape, get()->dtype); }

NDArray NDArray::view(const std::vector<int64_t>& shape, DataType dtype) const {
  if (!get()->is_contiguous()) LOOM_THROW(Error) << "view of a non-contiguous NDArray";
  auto node = make_object<NDArrayNode>();
  node->dtype = dtype;
  node->shape = Array(std::vector<Any>(shape.begin(), shape.end()));
  node->device = get()->device;
  node->sync_tensor();
  if (node->nbytes() != get()->nbytes()) {
    LOOM_THROW(Error) << "view of " << get()->nbytes() << " bytes as " << node->nbytes() << " bytes: the sizes differ";
  }
  node->tensor_.data = get()->dl_tensor().data;
  node->tensor_.byte_offset = get()->dl_tensor().byte_offset;
  node->base_ = object_ptr();
  node->storage_ = NDArrayNode::Storage::kView;
  return NDArray(node);
}

NDArray NDArray::wrap(void* data, const std::vector<int64_t>& shape, DataType dtype, Device device, ObjectRef owner) {
  return wrap_shape(data, Array(std::vector<Any>(shape.begin(), shape.end())), dtype, device, std::move(owner));
}

NDArray NDArray::wrap_shape(void* data, const Array& shape, DataType dtype, Device device, ObjectRef owner) {
  auto node = make_object<NDArrayNode>();
  node->dtype = dtype;
  node->shape = shape;
  node->device = device;
  node->sync_tensor();
  node->tensor_.data = data;
  node->base_ = owner.object_ptr();
  node->storage_ = NDArrayNode::Storage::kView;
  return NDArray(node);
}

namespace {
// Gathers a strided host tensor into compact row-major `dst`.
void gather_strided(const DLTensor& from, char* dst, size_t element) {
  std::vector<int64_t> index(from.ndim, 0);
  int64_t total = 1;
  for (int i = 0; i < from.ndim; ++i) total *= from.shape[i];
  const char* base = static_cast<const char*>(from.data) + from.byte_offset;
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = 0;
    for (int i = 0; i < from.ndim; ++i) offset += index[i] * from.strides[i];
    std::memcpy(dst + n * element, base + offset * static_cast<int64_t>(element), element);
    for (int i = from.ndim - 1; i >= 0; --i) {  // next index, row-major
      if (++index[i] < from.shape[i]) break;
      index[i] = 0;
    }
  }
}
}  // namespace

void NDArray::copy_from(const NDArray& other) const {
  const NDArrayNode* to = get();
  const NDArrayNode* from = other.get();
  if (from->dtype != to->dtype || other.shape_vector() != shape_vector()) {
    LOOM_THROW(Error) << "copy between NDArrays of different dtype or shape (" << from->dtype.to_string() << " vs "
                      << to->dtype.to_string() << ")";
  }
  if (!to->is_contiguous()) LOOM_THROW(Error) << "copy into a non-contiguous NDArray";
  if (!from->is_contiguous()) {
    if (from->device.device_type != Device::kCPU || to->device.device_type != Device::kCPU) {
      LOOM_THROW(Error) << "copy of a non-contiguous NDArray between devices: make it contiguous on its device first";
    }
    gather_strided(from->dl_tensor(), static_cast<char*>(const_cast<NDArrayNode*>(to)->data()),
                   element_bytes(from->dtype));
    return;
  }
  if (from->device.device_type != Device::kCPU && to->device.device_type != Device::kCPU &&
      from->device != to->device) {
    // Between two devices (OpenCL to Vulkan, or two of one kind): neither
    // device's API reads the other's memory, so through the host.
    copy_from(other.copy_to(Device{Device::kCPU, 0}));
    return;
  }
  Device api_device = to->device.device_type != Device::kCPU ? to->device : from->device;
  DLTensor target = to->dl_tensor();
  DeviceAPIRegistry::get(api_device).copy(from->dl_tensor(), target, nullptr);
}

NDArray NDArray::copy_to(Device device) const {
  NDArray out = empty(shape_vector(), get()->dtype, device);
  out.copy_from(*this);
  return out;
}

std::vector<int64_t> NDArray::shape_vector() const {
  std::vector<int64_t> out;
  for (const Any& d : get()->shape) out.push_back(d.as_int());
  return out;
}

double scalar_value(const Any& x, const std::string& what) {
  if (x.kind() == AnyKind::kInt) return static_cast<double>(x.as_int());
  if (x.kind() == AnyKind::kFloat) return x.as_float();
  if (const auto* a = x.kind() == AnyKind::kObject ? dynamic_cast<const NDArrayNode*>(x.object()) : nullptr) {
    if (a->numel() == 1 && a->device.device_type == kDLCPU) {
      const void* p = a->data();
      if (a->dtype == DataType::Int(64)) return static_cast<double>(*static_cast<const int64_t*>(p));
      if (a->dtype == DataType::Int(32)) return *static_cast<const int32_t*>(p);
      if (a->dtype == DataType::Float(32)) return *static_cast<const float*>(p);
      if (a->dtype == DataType::Float(64)) return *static_cast<const double*>(p);
    }
  }
  LOOM_THROW(TypeError) << what << " must be a number or a one-element host tensor, got " << x.describe();
}

}  // namespace loom::runtime
