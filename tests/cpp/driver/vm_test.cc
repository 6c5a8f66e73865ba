// The VM compiler and the VM: graph functions over call_dps / call_packed, the static memory
// plan, tuples, If, constants, input checks, save and load.  Kernels come
// from a C++ module standing in for what codegen would build.
#include "loom/driver/vm_compiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/graph/function.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/runtime/vm.h"
#include "loom/target/target.h"
#include "test_util.h"

namespace loom::runtime {
using driver::vm_compile;
using test::error_of;

namespace {
using Unary = float (*)(float);

// "test.kernels": elementwise kernels in destination-passing style.
class KernelModuleNode : public ModuleNode {
 public:
  std::string type_key() const override { return "test.kernels"; }
  std::vector<std::string> function_names() const override { return {"add", "relu", "scale", "signs"}; }
  std::optional<Function> own_function(const std::string& name) const override {
    auto unary = [name](Unary f) { return Function::typed([f](NDArray x, NDArray y) { map(x, y, f); }, name); };
    if (name == "scale") return unary([](float v) { return 2 * v; });
    if (name == "relu") return unary([](float v) { return std::max(v, 0.0f); });
    if (name == "add") {
      return Function::typed(
          [](NDArray a, NDArray b, NDArray c) {
            check(a, c);
            check(b, c);
            for (int64_t i = 0; i < c->numel(); ++i)
              c.data_as<float>()[i] = a.data_as<float>()[i] + b.data_as<float>()[i];
          },
          name);
    }
    if (name == "signs") {
      return Function::typed(
          [](NDArray x, NDArray pos, NDArray neg) {
            map(x, pos, [](float v) { return std::max(v, 0.0f); });
            map(x, neg, [](float v) { return std::min(v, 0.0f); });
          },
          name);
    }
    return std::nullopt;
  }
  std::string save_to_binary() const override { return ""; }
  LOOM_OBJECT(KernelModuleNode, ModuleNode, "test.KernelModule");

 private:
  static void check(const NDArray& in, const NDArray& out) {
    if (in.shape_vector() != out.shape_vector()) throw Error("kernel: shapes differ");
  }
  static void map(const NDArray& x, const NDArray& y, Unary f) {
    check(x, y);
    for (int64_t i = 0; i < y->numel(); ++i) y.data_as<float>()[i] = f(x.data_as<float>()[i]);
  }
};

Module kernels() {
  static const bool registered = [] {
    ModuleLoaderRegistry::register_loader(
        "test.kernels", Function::typed([](std::string) { return Module(make_object<KernelModuleNode>()); }));
    FunctionRegistry::register_function("test.vm.negate", Function::typed([](NDArray x) {
                                          NDArray y = NDArray::empty(x.shape_vector(), DataType::Float(32));
                                          for (int64_t i = 0; i < x->numel(); ++i)
                                            y.data_as<float>()[i] = -x.data_as<float>()[i];
                                          return y;
                                        }));
    FunctionRegistry::register_function(
        "test.vm.flat", Function::typed([](NDArray x) { return NDArray::empty({x->numel()}, DataType::Float(32)); }));
    FunctionRegistry::register_function("test.vm.count", Function::typed([]() {
                                          static int64_t calls = 0;
                                          return ++calls;
                                        }));
    return true;
  }();
  (void)registered;
  return Module(make_object<KernelModuleNode>());
}

const char* kPrims = R"(
@add = prim_func(%A: Buffer[(%n, %m), float32], %B: Buffer[(%n, %m), float32], %C: Buffer[(%n, %m), float32], %n: int64, %m: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent %m { %C[%i, %j] = %A[%i, %j] + %B[%i, %j]; } }
}
@relu = prim_func(%X: Buffer[(%n, %m), float32], %Y: Buffer[(%n, %m), float32], %n: int64, %m: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent %m { %Y[%i, %j] = max(%X[%i, %j], 0.0); } }
}
@scale = prim_func(%X: Buffer[(%n, %m), float32], %Y: Buffer[(%n, %m), float32], %n: int64, %m: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent %m { %Y[%i, %j] = %X[%i, %j] * 2.0; } }
}
@signs = prim_func(%X: Buffer[(%n, %m), float32], %P: Buffer[(%n, %m), float32], %N: Buffer[(%n, %m), float32], %n: int64, %m: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent %m {
    %P[%i, %j] = max(%X[%i, %j], 0.0);
    %N[%i, %j] = min(%X[%i, %j], 0.0);
  } }
}
)";

// main(x) = relu(2 * relu(2 * x)) + x, four temporaries.
const std::string kChain = std::string(kPrims) + R"(
@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] {
  let %a = call_dps<Tensor[(4, 8), float32]>(@scale, (%x,));
  let %b = call_dps<Tensor[(4, 8), float32]>(@relu, (%a,));
  let %c = call_dps<Tensor[(4, 8), float32]>(@scale, (%b,));
  let %d = call_dps<Tensor[(4, 8), float32]>(@relu, (%c,));
  call_dps<Tensor[(4, 8), float32]>(@add, (%d, %x))
}
)";

Module compile(const std::string& text) {
  Module vm = vm_compile(text::parse_module(text, "vm_test.loom"));
  vm.import_module(kernels());
  return vm;
}

NDArray random_tensor(std::vector<int64_t> shape, unsigned seed) {
  NDArray out = NDArray::empty(shape, DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (int64_t i = 0; i < out->numel(); ++i) out.data_as<float>()[i] = dist(rng);
  return out;
}

float chain_reference(float x) {
  float r = std::max(2 * std::max(2 * x, 0.0f), 0.0f);
  return r + x;
}

void expect_chain(const Module& vm, const std::vector<int64_t>& shape, unsigned seed) {
  NDArray x = random_tensor(shape, seed);
  NDArray y = vm.get_function("main")(x).cast<NDArray>();
  ASSERT_EQ(y.shape_vector(), shape);
  for (int64_t i = 0; i < x->numel(); ++i) ASSERT_EQ(y.data_as<float>()[i], chain_reference(x.data_as<float>()[i]));
}
}  // namespace

TEST(VM, ChainRunsAndReusesStorage) {
  Module vm = compile(kChain);
  for (unsigned seed : {1u, 2u, 3u}) expect_chain(vm, {4, 8}, seed);
  MemoryPlan plan = memory_plan(vm, "main");
  EXPECT_EQ(plan.planned_tensors, 4);
  EXPECT_EQ(plan.output_tensors, 1);
  EXPECT_EQ(plan.storages, 2);  // a and c share, b and d share
  EXPECT_EQ(plan.static_peak_bytes, 256);
  EXPECT_EQ(plan.static_naive_bytes, 512);
  EXPECT_EQ(plan.peak_bytes, "256");
  // The output is the caller's: a second call does not overwrite it.
  NDArray x = random_tensor({4, 8}, 9);
  NDArray first = vm.get_function("main")(x).cast<NDArray>();
  float kept = first.data_as<float>()[5];
  vm.get_function("main")(random_tensor({4, 8}, 10));
  EXPECT_EQ(first.data_as<float>()[5], kept);
}

TEST(VM, BestFitPicksTheSmallestFreeStorageAndGrowsWhenNoneFits) {
  // Storages as the plan meets the tensors: a (128 bytes) S0, b (64) S1,
  // a2 S2 (S0 busy), b2 S0 (a died), c S1 (fits exactly; S2 is larger),
  // d (256) grows S0 (none fits, both free ones are 128).
  Module vm = compile(std::string(kPrims) + R"(
@main = fn(%x: Tensor[(4, 8), float32], %y: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> (Tensor[(2, 8), float32], Tensor[(8, 8), float32]) {
  let %a = call_dps<Tensor[(4, 8), float32]>(@scale, (%x,));
  let %b = call_dps<Tensor[(2, 8), float32]>(@scale, (%y,));
  let %a2 = call_dps<Tensor[(4, 8), float32]>(@relu, (%a,));
  let %b2 = call_dps<Tensor[(2, 8), float32]>(@relu, (%b,));
  let %c = call_dps<Tensor[(2, 8), float32]>(@scale, (%b2,));
  let %d = call_dps<Tensor[(8, 8), float32]>(@scale, (%w,));
  (call_dps<Tensor[(2, 8), float32]>(@relu, (%c,)), call_dps<Tensor[(8, 8), float32]>(@relu, (%d,)))
}
)");
  MemoryPlan plan = memory_plan(vm, "main");
  EXPECT_EQ(plan.planned_tensors, 6);
  EXPECT_EQ(plan.output_tensors, 2);
  EXPECT_EQ(plan.storages, 3);
  EXPECT_EQ(plan.static_peak_bytes, 256 + 64 + 128);
  EXPECT_EQ(plan.static_naive_bytes, 128 + 64 + 128 + 64 + 64 + 256);
  NDArray x = random_tensor({4, 8}, 1), y = random_tensor({2, 8}, 2), w = random_tensor({8, 8}, 3);
  Array out = vm.get_function("main")(x, y, w).cast<Array>();
  NDArray c = out[0].cast<NDArray>(), d = out[1].cast<NDArray>();
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(c.data_as<float>()[i], 4 * std::max(y.data_as<float>()[i], 0.0f));
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(d.data_as<float>()[i], std::max(2 * w.data_as<float>()[i], 0.0f));
}

TEST(VM, SymbolicShapesAreBoundFromInputs) {
  std::string text = kChain;
  for (size_t at; (at = text.find("(4, 8)")) != std::string::npos;) text.replace(at, 6, "(%n, 8)");
  text.replace(text.find("(%n, 8)"), 7, "(%n: int64, 8)");
  Module vm = compile(text);
  // Sizes repeated and changed: a site reuses its last shape only when it
  // is the same (shape_array).
  for (int64_t n : {1, 3, 3, 7, 64, 7, 1}) expect_chain(vm, {n, 8}, static_cast<unsigned>(n));
  MemoryPlan plan = memory_plan(vm, "main");
  EXPECT_EQ(plan.storages, 2);
  EXPECT_FALSE(plan.static_peak_bytes.has_value());
  EXPECT_EQ(plan.peak_bytes, "%n * 32 + %n * 32");
  EXPECT_EQ(plan.naive_bytes, "%n * 32 + %n * 32 + %n * 32 + %n * 32");
}

TEST(VM, ShapeExpressionsEvaluateAndRefuseAForeignOperand) {
  // (%0 * 32 + 7) floordiv 4 with %0 = 5
  ShapeExpr e = ShapeExpr::binary(
      ShapeOp::kFloorDiv,
      ShapeExpr::binary(ShapeOp::kAdd, ShapeExpr::binary(ShapeOp::kMul, ShapeExpr::var(0), ShapeExpr::constant(32)),
                        ShapeExpr::constant(7)),
      ShapeExpr::constant(4));
  EXPECT_EQ(evaluate(e, {5}), 41);
  // An expression built by hand whose operand is not a shape expression.
  auto node = make_object<ShapeExprNode>();
  node->op = static_cast<int64_t>(ShapeOp::kAdd);
  node->a = ShapeExpr::constant(1);
  node->b = ObjectRef(make_object<NDArrayNode>());
  std::string error = error_of([&] { evaluate(ShapeExpr(node), {}); });
  EXPECT_NE(error.find("operand is not a runtime.ShapeExpr"), std::string::npos) << error;
}

TEST(VM, TuplesMultipleOutputsIfAndCallPacked) {
  Module vm = compile(std::string(kPrims) + R"(
@main = fn(%x: Tensor[(3, 5), float32], %flag: bool) -> (Tensor[(3, 5), float32], Tensor[(3, 5), float32]) {
  let %s = call_dps<(Tensor[(3, 5), float32], Tensor[(3, 5), float32])>(@signs, (%x,));
  let %r = if (%flag) { call_dps<Tensor[(3, 5), float32]>(@scale, (%s.0,)) } else { call_packed<Tensor[(3, 5), float32]>((%x,), name="test.vm.negate") };
  (%r, %s.1)
}
)");
  NDArray x = random_tensor({3, 5}, 4);
  for (bool flag : {true, false}) {
    Array out = vm.get_function("main")(x, flag).cast<Array>();
    ASSERT_EQ(out.size(), 2u);
    NDArray r = out[0].cast<NDArray>(), neg = out[1].cast<NDArray>();
    for (int64_t i = 0; i < 15; ++i) {
      float v = x.data_as<float>()[i];
      EXPECT_EQ(r.data_as<float>()[i], flag ? 2 * std::max(v, 0.0f) : -v);
      EXPECT_EQ(neg.data_as<float>()[i], std::min(v, 0.0f));
    }
  }
}

TEST(VM, ConstantsAndCallsBetweenGraphFunctions) {
  ir::IRModule mod = text::parse_module(std::string(kPrims) + R"(
@double = fn(%v: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  call_dps<Tensor[(2, 3), float32]>(@scale, (%v,))
}
@main = fn(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  let %w = @double(%x);
  call_dps<Tensor[(2, 3), float32]>(@add, (%w, %w))
}
)");
  // Replace the second %w of main's add by a constant.
  NDArray c = random_tensor({2, 3}, 7);
  auto main = mod.lookup("main").as<graph::FunctionNode>();
  const auto* let = main->body.as<graph::LetNode>();
  const auto* add = let->body.as<graph::CallNode>();
  graph::Call with_constant(add->callee, {add->args[0].cast<ir::Expr>(), graph::Tuple({let->var, graph::Constant(c)})},
                            add->attrs, {add->type_args[0].cast<ir::Type>()});
  graph::Function new_main({main->params[0].cast<graph::Var>()}, graph::Let(let->var, let->value, with_constant),
                           main->ret_type);
  Module vm = vm_compile(mod.with_function("main", new_main));
  vm.import_module(kernels());
  NDArray x = random_tensor({2, 3}, 8);
  NDArray y = vm.get_function("main")(x).cast<NDArray>();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.data_as<float>()[i], 2 * x.data_as<float>()[i] + c.data_as<float>()[i]);
  NDArray d = vm.get_function("double")(x).cast<NDArray>();
  EXPECT_EQ(d.data_as<float>()[4], 2 * x.data_as<float>()[4]);
}

TEST(VM, InputsAreCheckedAtTheBoundary) {
  std::string text = kChain;
  for (size_t at; (at = text.find("(4, 8)")) != std::string::npos;) text.replace(at, 6, "(%n, 8)");
  text.replace(text.find("(%n, 8)"), 7, "(%n: int64, 8)");
  text += R"(
@pair = fn(%p: Tensor[(%k: int64, 8), float32], %q: Tensor[(%k, 8), float32]) -> Tensor[(%k, 8), float32] {
  call_dps<Tensor[(%k, 8), float32]>(@add, (%p, %q))
}
)";
  Module vm = compile(text);
  Function main = vm.get_function("main"), pair = vm.get_function("pair");
  EXPECT_EQ(error_of([&] { main(); }), "@main takes 1 argument, got 0");
  EXPECT_EQ(error_of([&] { main(3); }),
            "@main: argument 0 (%x) must be a tensor of Tensor[(%n, 8), float32], got int 3");
  EXPECT_EQ(error_of([&] {
              main(NDArray::empty({4, 8}, DataType::Int(32)));
            }),
            "@main: argument 0 (%x) has dtype int32; expected float32");
  EXPECT_EQ(error_of([&] {
              main(NDArray::empty({4, 9}, DataType::Float(32)));
            }),
            "@main: argument 0 (%x) has shape (4, 9); expected Tensor[(%n, 8), float32] (dimension 1 must be 8)");
  EXPECT_EQ(error_of([&] { main(NDArray::empty({32}, DataType::Float(32))); }),
            "@main: argument 0 (%x) has shape (32,); expected Tensor[(%n, 8), float32]");
  EXPECT_EQ(error_of([&] {
              pair(NDArray::empty({3, 8}, DataType::Float(32)), NDArray::empty({4, 8}, DataType::Float(32)));
            }),
            "@pair: argument 1 (%q) has shape (4, 8); expected Tensor[(%k, 8), float32] (dimension 0 is 4, but %k is 3 "
            "from @pair: argument 0 (%p))");
  float storage[32];
  NDArray on_gpu = NDArray::wrap(storage, {4, 8}, DataType::Float(32), Device{Device::kOpenCL, 0});
  EXPECT_EQ(error_of([&] { main(on_gpu); }), "@main: argument 0 (%x) is on opencl:0; @main takes it on cpu:0");
  // A transposed view from a DLPack producer.
  int64_t shape[2] = {4, 8}, strides[2] = {1, 4};
  DLManagedTensor managed{};
  managed.dl_tensor = DLTensor{storage, DLDevice{kDLCPU, 0}, 2, DLDataType{kDLFloat, 32, 1}, shape, strides, 0};
  EXPECT_EQ(error_of([&] { main(NDArray::from_dlpack(&managed)); }),
            "@main: argument 0 (%x) is not contiguous; compiled code needs compact row-major tensors");
  // After all those, it still runs.
  expect_chain(vm, {5, 8}, 5);
}

TEST(VM, ErrorsWhileRunningNameTheFunctionAndTheCallee) {
  Module vm = vm_compile(text::parse_module(kChain));
  EXPECT_EQ(error_of([&] {
              vm.get_function("main")(random_tensor({4, 8}, 1));
            }),
            "the VM calls @scale through call_dps, and no module imported by the VM defines it (import the module "
            "codegen built for the prim functions)");
  Module bad = compile(std::string(kPrims) + R"(
@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] {
  call_packed<Tensor[(4, 8), float32]>((%x,), name="test.vm.flat")
}
)");
  EXPECT_EQ(error_of([&] {
              bad.get_function("main")(random_tensor({4, 8}, 1));
            }),
            "@main: call_packed 'test.vm.flat': call_packed 'test.vm.flat' returned object runtime.NDArray of shape "
            "(32,) float32; expected Tensor[(4, 8), float32]");
}

TEST(VM, CompileErrorsNameTheFunctionAndTheConstruct) {
  EXPECT_EQ(error_of([&] {
              vm_compile(text::parse_module(std::string(kPrims) + R"(
@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[?, float32] {
  call_dps<Tensor[?, float32]>(@relu, (%x,))
})"));
            }),
            "VM: @main: the output of call_dps @relu has no known shape (Tensor[?, float32])");
  EXPECT_EQ(error_of([&] {
              vm_compile(text::parse_module(std::string(kPrims) + R"(
@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[(%m: int64, 8), float32] {
  call_dps<Tensor[(%m, 8), float32]>(@relu, (%x,))
})"));
            }),
            "VM: @main: the output of call_dps @relu has the dimension %m, and no parameter's shape binds %m");
  EXPECT_EQ(error_of([&] { vm_compile(text::parse_module(kPrims)); }),
            "VM: the module has no graph function to compile");
  static const bool op_registered = [] {
    ir::OpRegistry::register_op(
        ir::OpDef{"test.vm.twice",
                  1,
                  {},
                  Function::typed([](ObjectRef call, Any) -> ObjectRef {
                    return call.as<graph::CallNode>()->args[0].as_object_ref().as<ir::ExprNode>()->checked_type;
                  }),
                  ir::PatternKind::kElementwise,
                  "test operator"});
    return true;
  }();
  (void)op_registered;
  EXPECT_EQ(error_of([&] {
              vm_compile(text::parse_module(R"(
@main = fn(%x: Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] {
  test.vm.twice(%x)
})"));
            }),
            "VM: @main: operator 'test.vm.twice' must be lowered before the VM runs it (LegalizeOps turns operators "
            "into call_dps of prim functions)");
  EXPECT_EQ(error_of([&] {
              vm_compile(text::parse_module(R"(
@main = fn(%x: Tensor[(4, 8), float32], %f: fn(Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] {
  %f(%x)
})"));
            }),
            "VM: @main: calls of local function values are not supported; call global functions");
}

TEST(VM, SavedAndLoadedThroughExportLibrary) {
  Module vm = compile(kChain);
  test::TempDir dir;
  export_library(vm, dir.file("vm.so"));
  Module loaded = load_module(dir.file("vm.so"));
  EXPECT_EQ(loaded->type_key(), "vm");
  expect_chain(loaded, {4, 8}, 11);
  EXPECT_EQ(memory_plan(loaded, "main").storages, 2);
  EXPECT_NE(loaded->inspect_source("bytecode").find("call_dps dps:scale"), std::string::npos);
  EXPECT_EQ(error_of([&] { memory_plan(loaded, "mian"); }),
            "the VM module has no function 'mian'; did you mean 'main'?");
}

// A VM executable comes from a file: its storages, shapes and thread
// count are checked when it is loaded (a tensor larger than its storage
// corrupted the heap).
TEST(VM, MalformedExecutablesAreRefused) {
  Module vm = compile(kChain);
  auto tampered = [&](const std::function<void(VMExecutableNode&, VMFunctionDefNode&)>& change) {
    ObjectRef exe = load_document(vm->save_to_binary(), "<vm>").as_object_ref();
    auto& node = const_cast<VMExecutableNode&>(*exe.as<VMExecutableNode>());
    change(node, const_cast<VMFunctionDefNode&>(*node.functions[0].as_object_ref().as<VMFunctionDefNode>()));
    return error_of([&] { make_vm_module(exe); });
  };
  EXPECT_EQ(tampered([](VMExecutableNode&, VMFunctionDefNode& f) {
              f.storage_sizes = Array({Any(ShapeExpr::constant(4)), Any(ShapeExpr::constant(128))});
            }),
            "VM function 'main': allocation 0 needs 128 bytes; its storage 0 has 4");
  EXPECT_EQ(tampered([](VMExecutableNode&, VMFunctionDefNode& f) {
              f.storage_sizes = Array({Any(ShapeExpr::constant(-64)), Any(ShapeExpr::constant(128))});
            }),
            "VM function 'main': storage 0 has -64 bytes");
  EXPECT_EQ(tampered([](VMExecutableNode&, VMFunctionDefNode& f) {
              std::vector<Any> sizes(2, Any(ShapeExpr::constant(int64_t{1} << 48)));
              f.storage_sizes = Array(sizes);
            }),
            "VM function 'main': the storages add up to more than Loom allocates");
  EXPECT_EQ(tampered([](VMExecutableNode&, VMFunctionDefNode& f) {
              ShapeExpr deep = ShapeExpr::constant(1);
              for (int i = 0; i < 1100; ++i) deep = ShapeExpr::binary(ShapeOp::kAdd, deep, ShapeExpr::constant(1));
              f.storage_sizes = Array({Any(deep), Any(ShapeExpr::constant(128))});
            }),
            "VM function 'main': a shape expression nests deeper than 1024");
  // Devices index the device table, and a storage's tensors share its device.
  EXPECT_EQ(tampered([](VMExecutableNode&, VMFunctionDefNode& f) {
              const_cast<VMAllocNode&>(*f.allocs[0].as_object_ref().as<VMAllocNode>()).device = 3;
            }),
            "VM function 'main': device int 3 is not in the device table of 1");
  EXPECT_EQ(tampered([](VMExecutableNode& e, VMFunctionDefNode& f) {
              e.devices = Array({Any(Device()), Any(Device::parse("opencl:0"))});
              f.storage_devices = Array({Any(int64_t{1})});
            }),
            "VM function 'main': storage devices and sizes differ in number");
  EXPECT_EQ(tampered([](VMExecutableNode& e, VMFunctionDefNode& f) {
              e.devices = Array({Any(Device()), Any(Device::parse("opencl:0"))});
              f.storage_devices = Array({Any(int64_t{1}), Any(int64_t{0})});
            }),
            "VM function 'main': an allocation is on another device than its storage 0");
  EXPECT_EQ(
      tampered([](VMExecutableNode& e, VMFunctionDefNode&) { e.devices = Array({Any(Device::parse("opencl:0"))}); }),
      "the VM's device table does not start with the host (cpu:0)");
  EXPECT_EQ(tampered([](VMExecutableNode& e, VMFunctionDefNode&) { e.num_threads = int64_t{1} << 40; }),
            "a pool of 1099511627776 threads is more than Loom runs (at most 1024)");
  // A symbolic storage too small for its tensor is caught when it runs.
  ObjectRef exe = load_document(vm->save_to_binary(), "<vm>").as_object_ref();
  auto& f =
      const_cast<VMFunctionDefNode&>(*exe.as<VMExecutableNode>()->functions[0].as_object_ref().as<VMFunctionDefNode>());
  f.storage_sizes = Array({Any(ShapeExpr::binary(ShapeOp::kAdd, ShapeExpr::constant(4), ShapeExpr::constant(0))),
                           Any(ShapeExpr::constant(128))});
  Module small = make_vm_module(exe);
  small.import_module(kernels());
  EXPECT_EQ(error_of([&] {
              small.get_function("main")(random_tensor({4, 8}, 3));
            }),
            "@main: a tensor of shape (4, 8) (128 bytes) does not fit its storage 0 (4 bytes)");
  // So is a size over a shape variable no input binds.
  f.shape_vars = Array({Any(std::string("n"))});
  f.storage_sizes = Array({Any(ShapeExpr::var(0)), Any(ShapeExpr::constant(128))});
  Module unbound = make_vm_module(exe);
  unbound.import_module(kernels());
  EXPECT_EQ(error_of([&] {
              unbound.get_function("main")(random_tensor({4, 8}, 3));
            }),
            "shape variable 0 is not bound by any input");
}

TEST(VM, TargetThreadsReachThePool) {
  if (threads_from_environment()) GTEST_SKIP() << "LOOM_NUM_THREADS overrides the target";
  ir::IRModule mod = text::parse_module(kChain);
  mod = target::with_target(mod, target::Target("cpu", Map({{"num-threads", int64_t{3}}})));
  vm_compile(mod);
  EXPECT_EQ(ThreadPool::global().num_threads(), 3);
}

}  // namespace loom::runtime
