#include <gtest/gtest.h>

#include "test_util.h"

#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/object/structural.h"
#include "loom/support/registration.h"
#include "loom/tir/function.h"
#include "sample_module.h"

namespace loom {
using namespace loom::test;  // NOLINT

TEST(IR, EveryNodeTypeIsRegisteredWithFields) {
  for (const char* key : {"ir.PrimType",     "ir.TensorType",  "ir.TupleType",   "ir.FuncType",    "ir.OpaqueType",
                          "tir.IntImm",      "tir.FloatImm",   "tir.StringImm",  "tir.Var",        "tir.Add",
                          "tir.Sub",         "tir.Mul",        "tir.Div",        "tir.FloorDiv",   "tir.FloorMod",
                          "tir.Min",         "tir.Max",        "tir.EQ",         "tir.NE",         "tir.LT",
                          "tir.LE",          "tir.GT",         "tir.GE",         "tir.And",        "tir.Or",
                          "tir.Not",         "tir.Select",     "tir.Cast",       "tir.Call",       "tir.Buffer",
                          "tir.BufferLoad",  "tir.Ramp",       "tir.Broadcast",  "tir.Let",        "tir.For",
                          "tir.BufferStore", "tir.Allocate",   "tir.LetStmt",    "tir.IfThenElse", "tir.SeqStmt",
                          "tir.Evaluate",    "tir.AttrStmt",   "tir.PrimFunc",   "ir.GlobalVar",   "ir.Op",
                          "graph.Var",       "graph.Constant", "graph.Call",     "graph.Tuple",    "graph.TupleGetItem",
                          "graph.Let",       "graph.If",       "graph.Function", "ir.ExternFunc",  "ir.IRModule",
                          "runtime.NDArray"}) {
    const TypeInfo* info = TypeRegistry::find(key);
    ASSERT_NE(info, nullptr) << key;
    EXPECT_TRUE(info->create) << key << " has no creator";
  }
  for (const char* key : {"ir.Type", "tir.PrimExpr", "tir.BinaryOp", "tir.Stmt", "ir.Expr", "ir.BaseFunc"}) {
    EXPECT_FALSE(TypeRegistry::info(key).create) << key << " is a base type and must not be creatable";
  }
  EXPECT_EQ(TypeRegistry::info("tir.Add").field("a")->type, "tir.PrimExpr");
  EXPECT_TRUE(
      TypeRegistry::is_derived_from(TypeRegistry::info("tir.Add").index, TypeRegistry::info("tir.BinaryOp").index));
}

TEST(IR, ConstructorsCheckWhatTheyCan) {
  using namespace loom::tir;  // NOLINT
  EXPECT_EQ(error_of([] { Add(Var("a", DataType::Int(32)), Var("b", DataType::Float(32))); }),
            "tir.Add: operand dtypes differ (int32 vs float32)");
  EXPECT_EQ(LT(Var("a"), Var("b"))->dtype, DataType::Bool());
  EXPECT_EQ(error_of([] { IntImm(DataType::Float(32), 1); }), "tir.IntImm needs an integer or bool dtype, got float32");
  EXPECT_EQ(error_of([] { Ramp(0, 1, 1); }), "tir.Ramp needs 2 to 1024 lanes, got 1");
  EXPECT_EQ(error_of([] { Ramp(0, 1, int64_t{1} << 32); }), "tir.Ramp needs 2 to 1024 lanes, got 4294967296");
  EXPECT_EQ(error_of([] { Broadcast(0, 1025); }), "tir.Broadcast needs 2 to 1024 lanes, got 1025");
  EXPECT_EQ(Ramp(0, 1, 4)->dtype, DataType::Int(32, 4));
  EXPECT_EQ(error_of([] { For(Var("i"), 0, 4, ForKind::kSerial, Evaluate(0), "threadIdx.x"); }),
            "tir.For: a thread axis is given exactly for thread_binding loops (kind serial, thread 'threadIdx.x')");
  EXPECT_EQ(error_of([] { parse_for_kind("paralel"); }),
            "unknown loop kind 'paralel'; did you mean 'parallel'? (kinds: serial, parallel, vectorized, unrolled, "
            "thread_binding)");
  EXPECT_EQ(error_of([] { PrimFunc({1}, Evaluate(0)); }),
            "tir.PrimFunc: parameter 0 must be a tir.Var or a tir.Buffer, got int 1");
  EXPECT_EQ(error_of([] { ir::ExternFunc("asm", "", ir::FuncType({}, ir::Type()), "stdcall"); }),
            "ir.ExternFunc: unknown calling convention 'stdcall' (conventions: dps, packed)");
}

TEST(IR, ModuleHoldsAllThreeVariantsOrderedByName) {
  ir::IRModule mod = sample_module();
  EXPECT_EQ(mod.names(), (std::vector<std::string>{"add_one", "fast_relu", "main"}));
  EXPECT_TRUE(mod.lookup("add_one")->is_instance<tir::PrimFuncNode>());
  EXPECT_TRUE(mod.lookup("fast_relu")->is_instance<ir::ExternFuncNode>());
  EXPECT_TRUE(mod.lookup("main")->is_instance<graph::FunctionNode>());
  EXPECT_EQ(downcast<tir::PrimFunc>(mod.lookup("add_one")).buffer_params().size(), 2u);
  EXPECT_EQ(error_of([&] { mod.lookup("man"); }), "the module has no function '@man'; did you mean 'main'?");
  ir::IRModule more = mod.with_attr("host", "llvm").with_function("extra", sample_prim_func(4));
  EXPECT_EQ(more.names().size(), 4u);
  EXPECT_EQ(mod.names().size(), 3u);  // the original is unchanged
  EXPECT_EQ(more->attrs.at("host").as_string(), "llvm");
}

TEST(IR, IndependentlyBuiltModulesAreStructurallyEqual) {
  ir::IRModule a = sample_module(), b = sample_module();
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(structural_equal(a, b)) << *structural_difference(a, b);
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  ir::IRModule c = sample_module(17);
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));
  // The first difference is the prim function's first buffer dimension.
  EXPECT_EQ(structural_difference(a, c).value(), "root.functions[\"add_one\"].params[0].shape[0].value: 16 vs 17");
}

TEST(IR, ConstantsCompareByBytes) {
  runtime::NDArray x = runtime::NDArray::empty({3}, DataType::Float(32));
  runtime::NDArray y = runtime::NDArray::empty({3}, DataType::Float(32));
  EXPECT_TRUE(structural_equal(graph::Constant(x), graph::Constant(y)));
  y.data_as<float>()[2] = 1.0f;
  EXPECT_EQ(structural_difference(graph::Constant(x), graph::Constant(y)).value(), "root.data: different data bytes");
  EXPECT_NE(structural_hash(graph::Constant(x)), structural_hash(graph::Constant(y)));
}

TEST(IR, VariablesCompareUpToRenamingAcrossFunctions) {
  using namespace loom::graph;  // NOLINT
  ir::TensorType t = tir::tensor_type({4}, DataType::Float(32));
  Var a("a", t), b("b", t);
  graph::Function f({a}, Tuple({a, a}));
  graph::Function g({b}, Tuple({b, b}));
  graph::Function h({a}, Tuple({a, b}));  // b is free here
  EXPECT_TRUE(structural_equal(f, g));
  EXPECT_FALSE(structural_equal(f, h));
  EXPECT_EQ(structural_difference(f, h).value(), "root.body.fields[1]: variables bound to different definitions");
}

TEST(OpRegistry, SchemaChecksAttributes) {
  ir::OpRegistry::register_op(ir::OpDef{"test.conv",
                                        1,
                                        {{"strides", "Array", Array({1, 1}), "window strides"},
                                         {"groups", "int", 1, "groups"},
                                         {"layout", "str", Any(), "data layout"}},
                                        Function(),
                                        ir::PatternKind::kOutputFusable,
                                        "a test convolution"});
  Map full = ir::OpRegistry::check_attrs("test.conv", Map({{"layout", "NCHW"}}));
  EXPECT_EQ(full.at("groups").as_int(), 1);
  EXPECT_EQ(error_of([] {
              ir::OpRegistry::check_attrs("test.conv", Map({{"layout", "NCHW"}, {"grops", 2}}));
            }),
            "operator 'test.conv' has no attribute 'grops'; did you mean 'groups'? (attributes: strides, groups, "
            "layout)");
  EXPECT_EQ(error_of([] {
              ir::OpRegistry::check_attrs("test.conv", Map({{"layout", 4}}));
            }),
            "operator 'test.conv': attribute 'layout' must be str, got int 4");
  EXPECT_EQ(error_of([] { ir::OpRegistry::check_attrs("test.conv", Map::empty()); }),
            "operator 'test.conv': required attribute 'layout' is missing");
  EXPECT_EQ(error_of([] { ir::Op::get("test.cnov"); }),
            "no operator named 'test.cnov' is registered or provided by a plugin; did you mean 'test.conv'?");
  EXPECT_EQ(ir::pattern_kind_name(ir::OpRegistry::get("test.conv").def.pattern), std::string("output_fusable"));
}

TEST(OpRegistry, PluginsAttachPropertiesThatRollBack) {
  ir::OpRegistry::register_op(ir::OpDef{"test.relu", 1, {}, Function(), ir::PatternKind::kElementwise, ""});
  {
    RegistrationScope scope("lowering_plugin");
    ir::OpRegistry::set_property("test.relu", "FLower", "relu_kernel");
    EXPECT_EQ(ir::OpRegistry::property("test.relu", "FLower")->as_string(), "relu_kernel");
    EXPECT_NE(error_of([] {
                ir::OpRegistry::set_property("test.relu", "FLower", "other");
              }).find("already has property 'FLower'"),
              std::string::npos);
  }  // init failed: rolled back
  EXPECT_FALSE(ir::OpRegistry::property("test.relu", "FLower"));
  EXPECT_TRUE(ir::OpRegistry::entry("test.relu"));
}

TEST(OpRegistry, CoreOperatorsConnectTheVariants) {
  EXPECT_EQ(ir::OpRegistry::get("call_dps").def.num_inputs, 2);
  EXPECT_EQ(ir::OpRegistry::get("call_packed").def.attrs.at(0).name, "name");
}

TEST(ExternKindRegistry, RegisterValidateAndSuggest) {
  ir::ExternKindRegistry::register_kind("test_asm", Function::typed([](ObjectRef, std::string) {}), "test assembly");
  EXPECT_EQ(ir::ExternKindRegistry::get("test_asm").doc, "test assembly");
  EXPECT_EQ(error_of([] { ir::ExternKindRegistry::get("test_ams"); }),
            "no extern kind named 'test_ams' is registered or provided by a plugin; did you mean 'test_asm'?");
  EXPECT_EQ(error_of([] {
              ir::ExternKindRegistry::register_kind("test_asm", Function::typed([](ObjectRef, std::string) {}));
            }),
            "extern kind 'test_asm' is already registered by core; a name is registered once");
}

}  // namespace loom
