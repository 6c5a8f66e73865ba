// The asm extern kind (plugins/asm, docs/extern-asm.md): text round trip,
// validation errors (each message, with the function and the assembly
// line), build in memory and through export_library/load_module against a
// reference computed here, the run-time argument checks, and target
// awareness (ISA and extensions).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "loom/driver/build.h"
#include "loom/graph/well_formed.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/plugin/manager.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "test_util.h"

namespace loom {
using runtime::NDArray;
using test::error_of;

namespace {
bool host_runs_avx_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

#define NEEDS_X86_AVX_FMA() \
  if (!host_runs_avx_fma()) GTEST_SKIP() << "this machine is not x86-64 with AVX and FMA"

// y = max(x, 0), n floats, with AVX and a scalar tail.
const char* kRelu =
    "  .text\\n  .globl relu\\nrelu:\\n  vxorps %ymm1, %ymm1, %ymm1\\n  xorl %eax, %eax\\n  movq %rdx, %rcx\\n"
    "  andq $-8, %rcx\\n1:\\n  cmpq %rcx, %rax\\n  jge 2f\\n  vmovups (%rdi,%rax,4), %ymm0\\n"
    "  vmaxps %ymm1, %ymm0, %ymm0\\n  vmovups %ymm0, (%rsi,%rax,4)\\n  addq $8, %rax\\n  jmp 1b\\n2:\\n"
    "  cmpq %rdx, %rax\\n  jge 3f\\n  vmovss (%rdi,%rax,4), %xmm0\\n  vmaxss %xmm1, %xmm0, %xmm0\\n"
    "  vmovss %xmm0, (%rsi,%rax,4)\\n  incq %rax\\n  jmp 2b\\n3:\\n  vzeroupper\\n  ret\\n";

// out = alpha * x + y over a (rows, 3) matrix: two symbolic dimensions
// (passed as rows, then n), and a constant one.
const char* kAxpyRows =
    "  .globl axpy_rows\\naxpy_rows:\\n  imulq $3, %r8\\n  vbroadcastss (%rdi), %xmm0\\n  xorl %eax, %eax\\n"
    "1:\\n  cmpq %r8, %rax\\n  jge 2f\\n  vmovss (%rdx,%rax,4), %xmm1\\n  vfmadd231ss (%rsi,%rax,4), %xmm0, %xmm1\\n"
    "  vmovss %xmm1, (%rcx,%rax,4)\\n  incq %rax\\n  jmp 1b\\n2:\\n  ret\\n";

// The same over (n, 3) floats.
std::string relu_rows() {
  std::string text = kRelu;
  return text.replace(text.find("relu:\\n"), 7, "relu:\\n  imulq $3, %rdx\\n");
}

std::string model(const std::string& relu_attrs = "features: [\"avx\"], isa: \"x86_64\"",
                  const std::string& relu_text = relu_rows()) {
  return "@relu = extern \"asm\" dps fn(Tensor[(%n: int64, 3), float32], Tensor[(%n, 3), float32]) -> none attrs {" +
         relu_attrs + "} payload \"" + relu_text +
         "\"\n\n"
         "@axpy_rows = extern \"asm\" dps fn(Tensor[(1), float32], Tensor[(%r: int64, 3), float32], "
         "Tensor[(%r, 3), float32], Tensor[(%r, 3), float32]) -> none attrs {features: [\"fma\"], isa: \"x86_64\"} "
         "payload \"" +
         std::string(kAxpyRows) +
         "\"\n\n"
         "@main = fn(%a: Tensor[(1), float32], %x: Tensor[(%b: int64, 3), float32], %y: Tensor[(%b, 3), float32]) {\n"
         "  let %z = call_dps<Tensor[(%b, 3), float32]>(@axpy_rows, (%a, %x, %y));\n"
         "  call_dps<Tensor[(%b, 3), float32]>(@relu, (%z,))\n"
         "}\n";
}

NDArray floats(std::vector<int64_t> shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(a->numel(), seed, -2, 2);
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}

// The text of a module with one asm function (payload `text`, escaped).
std::string relu_module(
    const std::string& attrs, const std::string& text,
    const std::string& signature = "fn(Tensor[(%n: int64), float32], Tensor[(%n), float32]) -> none",
    const std::string& convention = "dps") {
  return "@relu = extern \"asm\" " + convention + " " + signature + " attrs {" + attrs + "} payload \"" + text + "\"\n";
}

// The well-formedness problems of that module, parsed from "relu.loom".
std::string problem(const std::string& attrs, const std::string& text,
                    const std::string& signature = "fn(Tensor[(%n: int64), float32], Tensor[(%n), float32]) -> none",
                    const std::string& convention = "dps") {
  ir::IRModule m = text::parse_module(relu_module(attrs, text, signature, convention), "relu.loom");
  std::vector<ir::Diagnostic> out = graph::well_formed(m);
  return out.empty() ? "" : out[0].to_string();
}

// "relu.loom:1:COL: ", where `needle` stands in that module's text: the
// position in the .loom text that an assembler diagnostic names.
std::string at(const std::string& attrs, const std::string& text, const std::string& needle) {
  return "relu.loom:1:" + std::to_string(relu_module(attrs, text).find(needle) + 1) + ": ";
}
const char* kX86 = "isa: \"x86_64\"";
}  // namespace

TEST(Asm, PrintsParsesAndRoundTrips) {
  ir::IRModule m = text::parse_module(model(), "model.loom");
  EXPECT_TRUE(graph::well_formed(m).empty()) << ir::diagnostic_lines(graph::well_formed(m));
  std::string text = text::print_module(m);
  EXPECT_NE(text.find("@relu = extern \"asm\" dps fn(Tensor[(%n: int64, 3), float32], Tensor[(%n, 3), float32]) -> "
                      "none attrs {features: [\"avx\"], isa: \"x86_64\"} payload \"  .text\\n  .globl relu\\n"),
            std::string::npos)
      << text;
  ir::IRModule again = text::parse_module(text, "printed.loom");
  EXPECT_TRUE(structural_equal(m, again));
  EXPECT_EQ(text::print_module(again), text);
}

TEST(Asm, ValidationNamesTheFunctionAndTheAssemblyLine) {
  // an assembler error, at its line and column in the payload
  // (and where it stands in the .loom text, through the \\n escapes)
  std::string movq = "  .globl relu\\nrelu:\\n  movq %rax, %rbx, %rcx\\n  ret\\n";
  EXPECT_EQ(problem(kX86, movq), "@relu: the assembly (x86_64) does not assemble:\n    " + at(kX86, movq, "%rcx") +
                                     "asm line 3:20: invalid operand for instruction\n        movq %rax, %rbx, %rcx");
  std::string frobnicate = "  .globl relu\\nrelu:\\n  frobnicate %rax\\n";
  EXPECT_EQ(problem(kX86, frobnicate),
            "@relu: the assembly (x86_64) does not assemble:\n    " + at(kX86, frobnicate, "frobnicate") +
                "asm line 3:3: invalid instruction mnemonic 'frobnicate'\n        frobnicate %rax");
  // the symbol: defined, global
  EXPECT_EQ(problem(kX86, "relu:\\n  ret\\n"),
            "@relu: the assembly defines 'relu' but not as a global symbol (add .globl relu)");
  EXPECT_EQ(problem(kX86, "  .globl rleu\\nrleu:\\n  ret\\n"),
            "@relu: the assembly does not define the global symbol 'relu' (the function's name, or its global_symbol "
            "attribute); did you mean 'rleu'?");
  EXPECT_EQ(problem("isa: \"x86_64\", global_symbol: \"kernel\"", "  .globl kernel\\nkernel:\\n  ret\\n"), "");
  // extensions the code uses must be declared (x86: VEX and EVEX encodings)
  std::string vex = "  .globl relu\\nrelu:\\n\\n  vmaxps %ymm1, %ymm0, %ymm0\\n  ret\\n";
  EXPECT_EQ(problem(kX86, vex),
            "@relu: " + at(kX86, vex, "  vmaxps") +
                "asm line 4 is a VEX-encoded instruction, which needs avx, but the function does not declare it "
                "or an extension that implies it (attrs {features: [\"avx\"]})");
  std::string evex = "  .globl relu\\nrelu:\\n  vmaxps %zmm1, %zmm0, %zmm0\\n";
  EXPECT_EQ(problem("features: [\"avx2\"], isa: \"x86_64\"", evex),
            "@relu: " + at("features: [\"avx2\"], isa: \"x86_64\"", evex, "  vmaxps") +
                "asm line 3 is a EVEX-encoded instruction, which needs avx512f, but the function does not declare "
                "it or an extension that implies it (attrs {features: [\"avx512f\"]})");
  EXPECT_EQ(problem("features: [\"avx2\"], isa: \"x86_64\"", "  .globl relu\\nrelu:\\n  vmaxps %ymm1, %ymm0, %ymm0\\n"),
            "");
  // aarch64: LLVM checks the extensions itself
  EXPECT_EQ(problem("isa: \"aarch64\"", "  .globl relu\\nrelu:\\n  fmax v0.4s, v0.4s, v1.4s\\n  ret\\n"), "");
  std::string sve = "  .globl relu\\nrelu:\\n  ld1w {z0.s}, p0/z, [x0]\\n  ret\\n";
  EXPECT_EQ(problem("isa: \"aarch64\"", sve), "@relu: the assembly (aarch64) does not assemble:\n    " +
                                                  at("isa: \"aarch64\"", sve, "ld1w") +
                                                  "asm line 3:3: instruction requires: sve or sme\n"
                                                  "        ld1w {z0.s}, p0/z, [x0]");
  EXPECT_EQ(problem("features: [\"sve\"], isa: \"aarch64\"", "  .globl relu\\nrelu:\\n  ld1w {z0.s}, p0/z, [x0]\\n"),
            "");
  // attributes
  EXPECT_EQ(problem("", "x"), "@relu: an asm function needs the attribute isa, a string: one of x86_64, aarch64");
  EXPECT_EQ(problem("isa: \"x86-64\"", "x"),
            "@relu: isa 'x86-64' is not one the asm kind assembles (x86_64, aarch64); did you mean 'x86_64'?");
  EXPECT_EQ(problem("isa: \"x86_64\", featurs: []", "x"),
            "@relu: an asm function has no attribute 'featurs' (it has isa, features, global_symbol); did you mean "
            "'features'?");
  EXPECT_NE(problem("features: [\"avx3\"], isa: \"x86_64\"", "x")
                .find("@relu: 'avx3' is not an extension of x86_64 the asm kind knows; did you mean 'avx'? (known: "),
            std::string::npos);
  EXPECT_EQ(problem("features: \"avx\", isa: \"x86_64\"", "x"),
            "@relu: the attribute features must be a list of extension names, e.g. [\"avx2\", \"fma\"]");
  EXPECT_EQ(problem("global_symbol: \"my-kernel\", isa: \"x86_64\"", "x"),
            "@relu: the entry symbol 'my-kernel' is not a C identifier; name the function so, or set the attribute "
            "global_symbol");
  // signature and convention
  EXPECT_EQ(problem(kX86, "x", "fn(Tensor[(4), float32]) -> none", "packed"),
            "@relu: an asm function follows the dps convention (outputs are trailing parameters), not 'packed'");
  EXPECT_EQ(problem(kX86, "x", "fn(Tensor[(4), float32]) -> Tensor[(4), float32]"),
            "@relu: an asm function returns nothing (its outputs are parameters), but the signature returns "
            "Tensor[(4), float32]");
  EXPECT_EQ(problem(kX86, "x", "fn(Tensor[(4), float32]) -> (Tensor[(4), float32],)"),
            "@relu: an asm function returns nothing (its outputs are parameters), but the signature returns "
            "(Tensor[(4), float32],)");
  EXPECT_EQ(problem(kX86, "x", "fn(Tensor[?, float32]) -> none"),
            "@relu: parameter 0 has an unknown rank; an asm function must know its shapes");
  EXPECT_EQ(problem(kX86, "x", "fn(int64) -> none"),
            "@relu: parameter 0 is int64; an asm function takes tensors (their data pointers), and its scalars are "
            "the symbolic dimensions of their shapes");
}

TEST(Asm, RunsInMemoryAndFromAnExportedLibrary) {
  NEEDS_X86_AVX_FMA();
  runtime::Module built = driver::build(text::parse_module(model(), "model.loom"), target::Target("llvm"));
  std::string path = (std::filesystem::temp_directory_path() / "loom_asm_test.so").string();
  runtime::export_library(built, path);
  runtime::Module loaded = runtime::load_module(path);
  // The VM imports the asm module (no prim function: no codegen module),
  // which shows its sources.
  ASSERT_EQ(built.imports().size(), 1u);
  runtime::Module code = built.imports()[0];
  ASSERT_EQ(code->type_key(), "asm");
  EXPECT_NE(code->inspect_source("c").find("int32_t __loom_asm_relu(const LoomValue* args"), std::string::npos);
  EXPECT_NE(code->inspect_source("asm").find("# @relu\n  .text\n  .globl relu\n"), std::string::npos);
  EXPECT_FALSE(loaded.find_function("missing").has_value());
  for (const runtime::Module& m : {built, loaded}) {
    for (int64_t rows : {1, 3, 7, 333}) {  // 3, 9, 21, 999 floats: every one has a tail
      NDArray a = floats({1}, 1), x = floats({rows, 3}, 2 + rows), y = floats({rows, 3}, 3 + rows);
      NDArray out = m.get_function("main")(a, x, y).cast<NDArray>();
      ASSERT_EQ(out->shape[0].as_int(), rows);
      for (int64_t k = 0; k < rows * 3; ++k) {
        float want = std::max(std::fma(a.data_as<float>()[0], x.data_as<float>()[k], y.data_as<float>()[k]), 0.0f);
        ASSERT_EQ(out.data_as<float>()[k], want) << "rows " << rows << " element " << k;
      }
    }
  }
  std::filesystem::remove(path);
}

TEST(Asm, CheckTheirArgumentsAtRunTime) {
  NEEDS_X86_AVX_FMA();
  runtime::Module m = driver::build(text::parse_module(model(), "model.loom"), target::Target("llvm"));
  Function relu = m.get_function("relu"), axpy = m.get_function("axpy_rows");
  NDArray x = floats({3, 3}, 1), y = NDArray::empty({3, 3}, DataType::Float(32));
  relu(x, y);
  for (int k = 0; k < 9; ++k) EXPECT_EQ(y.data_as<float>()[k], std::max(x.data_as<float>()[k], 0.0f));
  EXPECT_EQ(error_of([&] { relu(x); }), "relu: takes 2 tensors (inputs, then outputs), got 1");
  EXPECT_EQ(error_of([&] { relu(x, int64_t{3}); }), "relu: argument 1 must be a tensor");
  EXPECT_EQ(error_of([&] {
              relu(x, NDArray::empty({3, 3}, DataType::Float(64)));
            }),
            "relu: argument 1 has dtype code 2 bits 64 lanes 1, expected float32");
  EXPECT_EQ(error_of([&] {
              relu(x, NDArray::empty({2, 3}, DataType::Float(32)));
            }),
            "relu: argument 1 has extent 2 in dimension 0, but n is 3 from an earlier argument");
  EXPECT_EQ(error_of([&] {
              relu(x, NDArray::empty({3, 4}, DataType::Float(32)));
            }),
            "relu: argument 1 has extent 4 in dimension 1, expected 3");
  EXPECT_EQ(error_of([&] { relu(x, NDArray::empty({9}, DataType::Float(32))); }),
            "relu: argument 1 has rank 1, expected 2");
  NDArray a = floats({1}, 1), rows = floats({2, 3}, 2), out = NDArray::empty({2, 3}, DataType::Float(32));
  EXPECT_EQ(error_of([&] {
              axpy(a, rows, rows, NDArray::empty({2, 4}, DataType::Float(32)));
            }),
            "axpy_rows: argument 3 has extent 4 in dimension 1, expected 3");
  EXPECT_EQ(error_of([&] { axpy(floats({2}, 1), rows, rows, out); }),
            "axpy_rows: argument 0 has extent 2 in dimension 0, expected 1");
  axpy(a, rows, rows, out);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(out.data_as<float>()[k],
              std::fma(a.data_as<float>()[0], rows.data_as<float>()[k], rows.data_as<float>()[k]));
  }
}

TEST(Asm, BuildChecksTheTargetsIsaAndExtensions) {
  PluginManager::global().load("asm");  // so that LLVM knows the aarch64 triple below
  ir::IRModule arm = text::parse_module(
      model("isa: \"aarch64\"", "  .globl relu\\nrelu:\\n  fmax v0.4s, v0.4s, v1.4s\\n  ret\\n"), "arm.loom");
  ir::IRModule arm_only = ir::IRModule({{"relu", arm.lookup("relu")}});
  EXPECT_NE(error_of([&] {
              driver::build(arm, target::Target("llvm", Map({{"mcpu", "haswell"}})));
            }).find("asm: @relu: it is written for aarch64, but target llvm (mcpu haswell) is x86_64"),
            std::string::npos);
  // An aarch64 target builds it; this x86-64 process cannot run it, and says so.
  target::Target aarch64("llvm", Map({{"mtriple", "aarch64-unknown-linux-gnu"}, {"mcpu", "cortex-a72"}}));
  runtime::Module cross = driver::build(arm_only, aarch64);
  NDArray x = floats({4, 3}, 1), y = NDArray::empty({4, 3}, DataType::Float(32));
  EXPECT_EQ(error_of([&] { cross.get_function("relu")(x, y); }),
            "@relu cannot run in this process: its code is aarch64 and this machine is x86_64 (export it and run it on "
            "a aarch64 machine)");
  // Extensions: haswell has AVX2 and FMA but not AVX-512.
  ir::IRModule wide = text::parse_module(model("features: [\"avx512f\"], isa: \"x86_64\"",
                                               "  .globl relu\\nrelu:\\n  vmaxps %zmm1, %zmm0, %zmm0\\n  ret\\n"),
                                         "wide.loom");
  EXPECT_NE(error_of([&] {
              driver::build(wide, target::Target("llvm", Map({{"mcpu", "haswell"}})));
            })
                .find("asm: @relu: it uses the x86_64 extension avx512f, which target llvm (mcpu haswell) lacks; "
                      "build for a CPU that has it (mcpu, mattr) or write the function without it"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              driver::build(wide, target::Target("llvm", Map({{"mcpu", "skylake-avx512"}, {"mattr", "-avx512f"}})));
            }).find("which target llvm (mcpu skylake-avx512) with mattr -avx512f lacks"),
            std::string::npos);
  // A target that has it builds; running on a CPU without it is an error,
  // not an illegal instruction.
  runtime::Module skx = driver::build(wide, target::Target("llvm", Map({{"mcpu", "skylake-avx512"}})));
#if defined(__x86_64__) && defined(__GNUC__)
  if (!__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(error_of([&] { skx.get_function("relu")(x, y); }),
              "relu: the assembly uses the x86_64 extension avx512f, which this CPU lacks");
  }
#endif
}

// Every extension name the kind accepts is one LLVM knows: declaring it
// and building for a CPU of the ISA either works or says the CPU lacks it,
// with no "not a recognized feature" from LLVM.
TEST(Asm, EveryKnownExtensionIsOneLLVMKnows) {
  PluginManager::global().load("asm");  // LLVM knows aarch64 from here on
  for (const auto& [isa, target] :
       {std::pair<std::string, target::Target>{"x86_64", target::Target("llvm", Map({{"mcpu", "sapphirerapids"}}))},
        std::pair<std::string, target::Target>{
            "aarch64",
            target::Target("llvm", Map({{"mtriple", "aarch64-unknown-linux-gnu"}, {"mcpu", "neoverse-v1"}}))}}) {
    std::string listed = problem("features: [\"bogus\"], isa: \"" + isa + "\"", "x");
    size_t start = listed.find("(known: ");
    ASSERT_NE(start, std::string::npos) << listed;
    std::stringstream names(listed.substr(start + 8, listed.size() - start - 9));
    std::string name;
    int count = 0;
    while (std::getline(names, name, ',')) {
      name.erase(0, name.find_first_not_of(' '));
      ir::IRModule m = text::parse_module("@f = extern \"asm\" dps fn() -> none attrs {features: [\"" + name +
                                          "\"], isa: \"" + isa + "\"} payload \"  .globl f\\nf:\\n  ret\\n\"\n");
      testing::internal::CaptureStderr();
      std::string error = error_of([&] { driver::build_kernels(m, target); });
      std::string printed = testing::internal::GetCapturedStderr();
      EXPECT_EQ(printed, "") << isa << " " << name;
      if (error != "no error") {
        EXPECT_NE(error.find("which target llvm"), std::string::npos) << error;
      }
      ++count;
    }
    EXPECT_GE(count, 10) << isa;
  }
}

TEST(Asm, TwoFunctionsMayNotDefineOneSymbol) {
  ir::IRModule m = text::parse_module(
      "@a = extern \"asm\" dps fn() -> none attrs {isa: \"x86_64\"} payload \"  .globl a\\n  .globl helper\\na:\\n"
      "helper:\\n  ret\\n\"\n"
      "@b = extern \"asm\" dps fn() -> none attrs {isa: \"x86_64\"} payload \"  .globl b\\n  .globl helper\\nb:\\n"
      "helper:\\n  ret\\n\"\n");
  EXPECT_EQ(error_of([&] {
              driver::build_kernels(m, target::Target("llvm", Map({{"mcpu", "haswell"}})));
            }),
            "asm: @b: it defines the global symbol 'helper', as @a does");
}

}  // namespace loom
