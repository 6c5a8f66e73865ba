// The SDK's C printer as a vendor derives from it (docs/target-c.md,
// "Deriving a C dialect"): a dialect overrides hooks and keeps the rest;
// the base printer refuses what only the dialect can say.
#include <gtest/gtest.h>

#include "loom/text/text.h"
#include "loom/support/strings.h"
#include "loom/target/c_source.h"
#include "test_util.h"

namespace loom {
namespace {

// A kernel dialect: __kernel functions with __global pointers, half floats,
// a thread index function, its own exp.
class VendorC : public target::CSourcePrinter {
 protected:
  std::string scalar_type(DataType t) override {
    return t.code == DataType::kFloat && t.bits == 16 ? "half" : CSourcePrinter::scalar_type(t);
  }
  std::string function_head(const std::string& name, const std::vector<std::string>& params) override {
    return "__kernel void " + name + "(" + join(params, ", ") + ")";
  }
  std::string function_tail() override { return ""; }
  std::string pointer_space(const tir::BufferNode*) override { return "__global"; }
  std::string intrinsic_name(const std::string& op, DataType t) override {
    return op == "exp" ? "vendor_exp" : CSourcePrinter::intrinsic_name(op, t);
  }
  std::string thread_index(const std::string& axis) override {
    return "vendor_thread(" + std::string(axis == "threadIdx.x" ? "0" : "1") + ")";
  }
};

const char* kKernel = R"(
@k = prim_func(%X: Buffer[(64), float16], %Y: Buffer[(64), float32]) {
  for %t: int64 from 0 extent 64 thread("threadIdx.x") {
    %Y[%t] = call(float32, "exp", cast(float32, %X[%t])) + min(%Y[%t], 1.0);
  }
}
)";

TEST(CSourcePrinter, ADialectChangesOnlyWhatItOverrides) {
  auto func = downcast<tir::PrimFunc>(text::parse_module(kKernel).lookup("k"));
  VendorC printer;
  std::string text = printer.print_function(func, "k");
  EXPECT_NE(text.find("__kernel void k(__global half* restrict X_data, __global float* restrict Y_data) {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("const int64_t t = (int64_t)(0LL + vendor_thread(0));"), std::string::npos) << text;
  EXPECT_NE(text.find("Y_data[t] = (vendor_exp(((float)X_data[t])) + loom_min_float32(Y_data[t], 1.0f));"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("return"), std::string::npos) << text;  // a void kernel
  EXPECT_NE(printer.helper_definitions().find("static inline float loom_min_float32(float a, float b)"),
            std::string::npos);
}

TEST(CSourcePrinter, TheBasePrinterRefusesWhatOnlyADialectCanSay) {
  auto func = downcast<tir::PrimFunc>(text::parse_module(kKernel).lookup("k"));
  target::CSourcePrinter base;
  EXPECT_NE(test::error_of([&] { base.print_function(func, "k"); }).find("c: @k: C has no type for float16"),
            std::string::npos);
  auto module = text::parse_module(R"(
@k = prim_func(%Y: Buffer[(64), float32]) {
  for %t: int64 from 0 extent 64 thread("blockIdx.y") { %Y[%t] = 0.0; }
}
)");
  EXPECT_NE(test::error_of([&] {
              base.print_host_module(module, nullptr);
            }).find("c: @k: a loop is bound to the GPU thread axis 'blockIdx.y'; C code runs on the CPU"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
