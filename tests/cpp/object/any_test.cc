#include "loom/object/any.h"

#include <gtest/gtest.h>

#include "loom/object/containers.h"
#include "loom/object/function.h"

namespace loom {

TEST(DataType, PrintsAndParsesEveryKind) {
  for (const char* text : {"int8", "int64", "uint1", "uint16", "float16", "float32x4", "float64", "bfloat16", "bool",
                           "boolx8", "handle", "int32x16"}) {
    EXPECT_EQ(DataType::parse(text).to_string(), text);
  }
  EXPECT_EQ(DataType::parse("float32x4"), DataType::Float(32, 4));
  EXPECT_EQ(DataType::parse("uint8"), DataType::UInt(8));
  EXPECT_EQ(DataType::Bool().bits, 8);
}

TEST(DataType, RejectsMalformedTextWithTheText) {
  for (const char* text : {"", "float", "float31", "int32x", "int32x0", "bool8", "bfloat32", "f32", "int32xx4"}) {
    try {
      DataType::parse(text);
      ADD_FAILURE() << "parsed '" << text << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + text + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Device, PrintsParsesAndSuggests) {
  EXPECT_EQ(Device::parse("cpu").to_string(), "cpu:0");
  EXPECT_EQ(Device::parse("opencl:2").device_type, Device::kOpenCL);
  EXPECT_EQ(Device::parse("opencl:2").device_id, 2);
  try {
    Device::parse("vulcan:0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'vulkan'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Device::parse("cpu:x"), Error);
}

TEST(Any, HoldsEveryKind) {
  EXPECT_EQ(Any().kind(), AnyKind::kNone);
  EXPECT_EQ(Any(true).kind(), AnyKind::kBool);
  EXPECT_EQ(Any(7).as_int(), 7);
  EXPECT_EQ(Any(int64_t{1} << 40).as_int(), int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(Any(2.5).as_float(), 2.5);
  EXPECT_DOUBLE_EQ(Any(3).as_float(), 3.0);  // int widens to float
  EXPECT_EQ(Any("text").as_string(), "text");
  EXPECT_EQ(Any(DataType::Float(16)).as_dtype(), DataType::Float(16));
  EXPECT_EQ(Any(Device::parse("vulkan:1")).as_device(), Device::parse("vulkan:1"));
  int target = 0;
  EXPECT_EQ(Any(static_cast<void*>(&target)).as_opaque_ptr(), &target);
  EXPECT_EQ(Any(Array({1, 2})).kind(), AnyKind::kObject);
  EXPECT_EQ(Any(String("s")).kind(), AnyKind::kStr);
  EXPECT_EQ(Any(Function([](const Any*, int32_t) { return Any(); })).kind(), AnyKind::kFunction);
}

TEST(Any, CastsAreStrictAndSayWhatWasExpected) {
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const TypeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { Any(1).as_bool(); }), "expected bool, got int 1");
  EXPECT_EQ(message([] { Any(true).as_int(); }), "expected int, got bool true");
  EXPECT_EQ(message([] { Any("x").cast<int>(); }), "expected int, got str 'x'");
  EXPECT_EQ(message([] { Any(1.5).as_int(); }), "expected int, got float 1.5");
  EXPECT_EQ(message([] { Any("float32").as_dtype(); }), "expected dtype, got str 'float32'");
  EXPECT_EQ(message([] { Any(Array({})).cast<Map>(); }), "expected Map, got Array");
  EXPECT_EQ(message([] { Any(3).cast<Array>(); }), "expected Array, got int 3");
}

TEST(Any, CountsReferences) {
  Array array({1, 2, 3});
  EXPECT_EQ(array->use_count(), 1);
  {
    Any a(array);
    Any b = a;
    EXPECT_EQ(array->use_count(), 3);
    Any c = std::move(b);
    EXPECT_EQ(array->use_count(), 3);
    EXPECT_TRUE(b.is_none());
  }
  EXPECT_EQ(array->use_count(), 1);
  Array back = Any(array).cast<Array>();
  EXPECT_TRUE(back.same_as(array));
}

TEST(Containers, MapLookupSuggestsKeys) {
  Map map({{"alpha", 1}, {"beta", 2}});
  EXPECT_EQ(map.at("beta").as_int(), 2);
  try {
    map.at("alpah");
    FAIL();
  } catch (const LookupError& e) {
    EXPECT_EQ(std::string(e.what()), "no key 'alpah' in map; did you mean 'alpha'?");
  }
}

}  // namespace loom
