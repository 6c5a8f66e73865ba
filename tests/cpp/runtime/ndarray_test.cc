// NDArray on DLPack, device APIs and the workspace pool.
#include "loom/runtime/ndarray.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "loom/object/serialization.h"
#include "loom/object/structural.h"
#include "loom/runtime/device_api.h"
#include "loom/support/registration.h"
#include "test_util.h"

namespace loom::runtime {
using test::error_of;

namespace {
NDArray random_array(const std::vector<int64_t>& shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < a->numel(); ++i) a.data_as<float>()[i] = dist(rng);
  return a;
}
}  // namespace

TEST(NDArray, EmptyIsAlignedZerosIsZeroedAndBothAreDescribedByDLTensor) {
  for (size_t alignment : {64u, 256u, 4096u}) {
    NDArray a = NDArray::empty({3, 5}, DataType::Float(64), Device(), alignment);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % alignment, 0u);
    // A recycled block (the allocator's cache) comes back zeroed by zeros().
    for (int64_t i = 0; i < 15; ++i) a.data_as<double>()[i] = 1.5;
    a = NDArray();
    NDArray z = NDArray::zeros({3, 5}, DataType::Float(64), alignment);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(z->data()) % alignment, 0u);
    for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(z.data_as<double>()[i], 0.0);
  }
  NDArray a = NDArray::empty({2, 3, 4}, DataType::Int(8));
  const DLTensor& t = a->dl_tensor();
  EXPECT_EQ(t.ndim, 3);
  EXPECT_EQ(t.shape[2], 4);
  EXPECT_EQ(t.strides, nullptr);
  EXPECT_EQ(t.dtype.code, kDLInt);
  EXPECT_EQ(t.dtype.bits, 8);
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(a->nbytes(), 24u);
}

TEST(NDArray, ErrorsNameTheProblem) {
  EXPECT_EQ(error_of([] {
              NDArray::empty({2, -1}, DataType::Float(32));
            }),
            "a float32 tensor: dimension 1 of shape (2, -1) is negative");
  EXPECT_EQ(error_of([] { NDArray::empty({2}, DataType::Int(4)); }),
            "NDArray of int4: elements must be a whole number of bytes");
  NDArray a = NDArray::empty({4, 4}, DataType::Float(32));
  EXPECT_EQ(error_of([&] { a.view({3, 5}); }), "view of 64 bytes as 60 bytes: the sizes differ");
  EXPECT_EQ(error_of([&] {
              a.copy_from(NDArray::empty({4, 4}, DataType::Float(64)));
            }),
            "copy between NDArrays of different dtype or shape (float64 vs float32)");
  EXPECT_EQ(error_of([] { NDArray::empty({2}, DataType::Float(32), Device::parse("metal:0")); }),
            "no device API for 'metal' (device metal:0): no loaded plugin provides 'device:metal'");
  EXPECT_EQ(error_of([] { NDArray::empty({2}, DataType::Float(32), Device(), 3); }),
            "a float32 tensor of shape (2,) on cpu:0: alignment 3 is not a power of two of at least 8");
}

TEST(NDArray, ViewsShareDataAndKeepTheSourceAlive) {
  NDArray v;
  float* data = nullptr;
  {
    NDArray a = random_array({2, 6}, 1);
    data = a.data_as<float>();
    v = a.view({3, 4});
  }
  EXPECT_EQ(v.data_as<float>(), data);
  EXPECT_EQ(v.shape_vector(), (std::vector<int64_t>{3, 4}));
  v.data_as<float>()[11] = 42.0f;  // still valid memory
  EXPECT_EQ(data[11], 42.0f);
}

TEST(NDArray, CopiesMatchTheSourceOnRandomData) {
  NDArray a = random_array({7, 13}, 2);
  NDArray b = a.copy_to(Device());
  EXPECT_NE(a->data(), b->data());
  EXPECT_TRUE(structural_equal(a, b));
  NDArray c = NDArray::empty({7, 13}, DataType::Float(32));
  c.copy_from(a);
  for (int64_t i = 0; i < 91; ++i) ASSERT_EQ(c.data_as<float>()[i], a.data_as<float>()[i]);
}

TEST(DLPack, ExportIsZeroCopyAndKeepsTheArrayAlive) {
  DLManagedTensor* managed;
  float* data;
  {
    NDArray a = random_array({4, 3}, 3);
    data = a.data_as<float>();
    managed = a.to_dlpack();
    EXPECT_EQ(a->use_count(), 2);  // the consumer holds a reference
  }
  EXPECT_EQ(managed->dl_tensor.data, static_cast<void*>(data));
  EXPECT_EQ(managed->dl_tensor.shape[0], 4);
  float first = static_cast<float*>(managed->dl_tensor.data)[0];
  EXPECT_EQ(first, data[0]);
  managed->deleter(managed);  // releases the last reference
}

namespace {
struct Producer {
  std::vector<float> values;
  std::vector<int64_t> shape, strides;
  bool deleted = false;
  DLManagedTensor managed{};
};

DLManagedTensor* produce(Producer& p, bool transposed) {
  p.values.resize(6);
  for (int i = 0; i < 6; ++i) p.values[i] = static_cast<float>(i);
  p.shape = {2, 3};
  p.strides = transposed ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{3, 1};
  p.managed.dl_tensor = DLTensor{p.values.data(), DLDevice{kDLCPU, 0}, 2, DLDataType{kDLFloat, 32, 1},
                                 p.shape.data(),  p.strides.data(),    0};
  p.managed.manager_ctx = &p;
  p.managed.deleter = [](DLManagedTensor* self) { static_cast<Producer*>(self->manager_ctx)->deleted = true; };
  return &p.managed;
}
}  // namespace

TEST(DLPack, ImportIsZeroCopyAndCallsTheDeleterOnce) {
  Producer p;
  {
    NDArray a = NDArray::from_dlpack(produce(p, false));
    EXPECT_EQ(a.data_as<float>(), p.values.data());
    EXPECT_TRUE(a->is_contiguous());
    EXPECT_EQ(a.shape_vector(), (std::vector<int64_t>{2, 3}));
    EXPECT_FALSE(p.deleted);
  }
  EXPECT_TRUE(p.deleted);
}

TEST(DLPack, StridedImportReadsThroughItsStrides) {
  Producer p;
  NDArray a = NDArray::from_dlpack(produce(p, true));  // element (i, j) at i + 2j
  EXPECT_FALSE(a->is_contiguous());
  // The bytes payload (used by equality, hashing, JSON) is the compact copy.
  NDArray compact = a.copy_to(Device());
  const float expected[] = {0, 2, 4, 1, 3, 5};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(compact.data_as<float>()[k], expected[k]) << k;
  NDArray back = load_json(save_json(a)).cast<NDArray>();
  EXPECT_TRUE(back->is_contiguous());
  EXPECT_TRUE(structural_equal(back, compact));
}

TEST(DLPack, TensorsLoomCannotDescribeAreRefusedAndReleased) {
  struct Case {
    DLDataType dtype;
    std::vector<int64_t> shape;
    const char* message;
  };
  const Case cases[] = {
      {{kDLComplex, 64, 1}, {2, 3}, "from_dlpack: complex64 elements are not supported (Loom takes bool"},
      {{kDLOpaqueHandle, 64, 1}, {2, 3}, "from_dlpack: handle64 elements are not supported"},
      {{kDLFloat, 128, 1}, {2, 3}, "from_dlpack: float128 elements are not supported"},
      {{kDLInt, 4, 1}, {2, 3}, "from_dlpack: int4 elements are not supported"},
      {{9, 32, 1}, {2, 3}, "from_dlpack: DLPack type code 9, 32-bit, elements are not supported"},
      {{kDLFloat, 32, 1}, {2, -3}, "from_dlpack: the tensor: dimension 1 of shape (2, -3) is negative"},
      {{kDLFloat, 32, 1},
       {int64_t{1} << 40, int64_t{1} << 40},
       "from_dlpack: the tensor: shape (1099511627776, 1099511627776) has more elements than fit"},
  };
  for (const Case& c : cases) {
    Producer p;
    DLManagedTensor* managed = produce(p, false);
    p.shape = c.shape;
    managed->dl_tensor.dtype = c.dtype;
    managed->dl_tensor.strides = nullptr;
    std::string message;
    try {
      NDArray::from_dlpack(managed);
    } catch (const Error& e) {
      message = e.what();
      if (c.dtype.code != kDLFloat || c.dtype.bits != 32) {
        EXPECT_TRUE(dynamic_cast<const TypeError*>(&e)) << message;
      }
    }
    EXPECT_EQ(message.rfind(c.message, 0), 0u) << message;
    EXPECT_TRUE(p.deleted) << c.message;
  }
}

TEST(DLPack, RoundTripThroughBothDirectionsSharesData) {
  NDArray a = random_array({5}, 4);
  NDArray b = NDArray::from_dlpack(a.to_dlpack());
  EXPECT_EQ(b->data(), a->data());
  EXPECT_TRUE(structural_equal(a, b));
}

TEST(DeviceAPI, RegistryAndWorkspacePool) {
  EXPECT_EQ(DeviceAPIRegistry::list(), std::vector<std::string>{"cpu"});
  DeviceAPI& cpu = DeviceAPIRegistry::get(Device());
  void* p = cpu.alloc_workspace(Device(), 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  cpu.free_workspace(Device(), p);
  void* q = cpu.alloc_workspace(Device(), 120);  // same size class (128): reused
  EXPECT_EQ(p, q);
  void* r = cpu.alloc_workspace(Device(), 4000);  // another class: new block
  EXPECT_NE(r, q);
  cpu.free_workspace(Device(), q);
  cpu.free_workspace(Device(), r);
  int local = 0;
  EXPECT_EQ(error_of([&] { cpu.free_workspace(Device(), &local); }),
            "free_workspace of a pointer the workspace pool did not hand out");
}

// An output of a model comes and goes on every call: from 64 KiB the block
// is kept and handed out again, not given back to the kernel (whose fresh
// pages cost a fault each); small blocks go to malloc as they are.
TEST(DeviceAPI, CpuKeepsFreedBlocksFrom64KiB) {
  DeviceAPI& cpu = DeviceAPIRegistry::get(Device());
  for (size_t bytes : {size_t{64} << 10, size_t{512} << 10, size_t{3} << 20}) {
    void* p = cpu.alloc(Device(), bytes, 64);
    cpu.free(Device(), p);
    void* other = cpu.alloc(Device(), bytes, 128);  // another alignment: another block
    void* q = cpu.alloc(Device(), bytes, 64);
    EXPECT_EQ(p, q) << bytes;
    EXPECT_NE(other, q) << bytes;
    cpu.free(Device(), q);
    cpu.free(Device(), other);
  }
}

// A vendor names its device (DLPack has no code for it) before it
// registers the device's API; a failed init takes both back.
TEST(DeviceAPI, VendorDevicesAreNamedWithACodeOfTheVendorRange) {
  class HostMemory : public DeviceAPI {
   public:
    void* alloc(Device, size_t bytes, size_t) override { return std::malloc(bytes); }
    void free(Device, void* p) override { std::free(p); }
    void copy(const DLTensor&, DLTensor&, void*) override {}
    void synchronize(Device, void*) override {}
    void* alloc_workspace(Device, size_t bytes) override { return std::malloc(bytes); }
    void free_workspace(Device, void* p) override { std::free(p); }
  };
  EXPECT_EQ(error_of([] { DeviceAPIRegistry::register_api("dsp", std::make_shared<HostMemory>()); }),
            "device API for 'dsp': no device is named 'dsp'; a vendor's device registers its name and code first: "
            "Device::register_type(\"dsp\", CODE) with CODE from 64 to 127");
  {
    RegistrationScope scope("vendor_a");
    Device::register_type("dsp", 90);
    Device::register_type("dsp", 90);  // again: nothing to do
    DeviceAPIRegistry::register_api("dsp", std::make_shared<HostMemory>());
    Device d = Device::parse("dsp:1");
    EXPECT_EQ(d.device_type, 90);
    EXPECT_EQ(d.device_id, 1);
    EXPECT_EQ(d.to_string(), "dsp:1");
    EXPECT_EQ(device_name(90), "dsp");
    NDArray a = NDArray::empty({3}, DataType::Float(32), d);
    EXPECT_EQ(a->device.to_string(), "dsp:1");
    EXPECT_EQ(error_of([] { Device::register_type("dsp", 91); }),
              "device 'dsp' (code 91): the name is already registered by vendor_a as 'dsp' (code 90)");
    EXPECT_EQ(error_of([] { Device::register_type("tpu", 90); }),
              "device 'tpu' (code 90): the code is already registered by vendor_a as 'dsp' (code 90)");
    // scope not committed: rolled back here, as after a failed init
  }
  EXPECT_FALSE(Device::type_of("dsp").has_value());
  EXPECT_EQ((Device{90, 0}).to_string(), "device90:0");
  EXPECT_EQ(error_of([] { Device::parse("dsp:0"); }).substr(0, 26), "unknown device 'dsp' in 'd");
  EXPECT_EQ(error_of([] { Device::register_type("opencl", 90); }),
            "device name 'opencl' is built in (DLPack's own device)");
  EXPECT_EQ(error_of([] { Device::register_type("dsp", 12); }),
            "device 'dsp': code 12 is not a vendor device code (64 to 127; the codes below are DLPack's)");
  EXPECT_EQ(error_of([] { Device::register_type("Dsp-1", 90); }),
            "device name 'Dsp-1': use lower-case letters, digits and '_', starting with a letter");
}

}  // namespace loom::runtime
