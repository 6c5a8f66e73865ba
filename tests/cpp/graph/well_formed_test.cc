// Well-formedness and type inference.
#include "loom/graph/well_formed.h"
#include "loom/graph/type_infer.h"

#include <gtest/gtest.h>

#include "loom/graph/function.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/tir/function.h"
#include "ir/sample_module.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
void register_kinds() {
  static const bool done = [] {
    ensure_sample_extern_kind();
    ir::ExternKindRegistry::register_kind("picky", Function::typed([](ObjectRef f, std::string) {
                                            if (f.as<ir::ExternFuncNode>()->payload.empty())
                                              throw Error("payload must not be empty");
                                          }));
    ir::OpRegistry::register_op(ir::OpDef{"test.unary", 1, {}, Function(), ir::PatternKind::kElementwise, ""});
    return true;
  }();
  (void)done;
}

std::vector<std::string> problems(const std::string& text) {
  register_kinds();
  ir::IRModule mod = text::parse_module(text, "case.loom");
  std::vector<ir::Diagnostic> out = graph::well_formed(mod);
  if (out.empty()) graph::infer_types(mod, &out);
  std::vector<std::string> messages;
  for (const auto& d : out) messages.push_back("@" + d.function + ": " + d.message);
  return messages;
}

const char* kPrimHeader = "@f = prim_func(%A: Buffer[(16), float32], %n: int64) {\n";
}  // namespace

TEST(WellFormed, SampleModuleIsWellFormedAndTyped) {
  register_kinds();
  ir::IRModule typed = graph::check_module(sample_module());
  ir::Type ret = downcast<graph::Function>(typed.lookup("main"))->ret_type;
  ir::TensorType t16 = tir::tensor_type({16}, DataType::Float(32));
  EXPECT_TRUE(structural_equal(ret, ir::TupleType({t16, tir::tensor_type({2}, DataType::Float(32))})))
      << ir::to_text(Any(ret));
}

TEST(WellFormed, PrimFunctionProblems) {
  struct Case {
    std::string body, message;
  };
  std::vector<Case> cases = {
      {"eval %x: int64 + 1;", "@f: variable '%x' is used but not bound"},
      {"%C: Buffer[(4), float32][0] = 1.0;",
       "@f: buffer '%C' is used but is neither a parameter nor allocated by an enclosing alloc"},
      {"%A[0, 1] = 1.0;", "@f: buffer '%A' has 1 dimension but is indexed with 2"},
      {"%A[1.0] = 1.0;", "@f: index 0 of buffer '%A' has type float32; buffer indices are integers"},
      {"%A[0] = 1;", "@f: stores a int64 value into buffer '%A' of float32"},
      {"for %i: int32 from int32(0) extent 16 { eval %i; }",
       "@f: loop bound of type int64 for loop variable '%i' of type int32"},
      {"if 1 { eval 0; }", "@f: the condition of if has type int64, not bool"},
      {"let %x: int32 = 5 { eval %x; }", "@f: let binds '%x' of type int32 to a value of type int64"},
      {"eval select(1, 2, 3);", "@f: the condition of select has type int64, not bool"},
  };
  for (const auto& c : cases) {
    auto found = problems(std::string(kPrimHeader) + "  " + c.body + "\n}\n");
    ASSERT_EQ(found.size(), 1u) << c.body << ": " << (found.empty() ? "none" : found[0]);
    EXPECT_EQ(found[0], c.message) << c.body;
  }
  // A symbolic dimension is bound by the buffer parameter that uses it.
  EXPECT_TRUE(problems("@g = prim_func(%A: Buffer[(%m: int64), float32]) {\n  %A[%m - 1] = 0.0;\n}\n").empty());
}

TEST(WellFormed, ScopingAndSingleBinding) {
  register_kinds();
  using namespace loom::tir;  // NOLINT
  Buffer a("A", DataType::Float(32), {PrimExpr(int64_t{8})});
  Var i("i", DataType::Int(64));
  Stmt store = BufferStore(a, FloatImm(DataType::Float(32), 0), {i});
  // The same variable bound by two loops, and used after its loop.
  Stmt body = SeqStmt({For(i, int64_t{0}, int64_t{8}, ForKind::kSerial, store),
                       For(i, int64_t{0}, int64_t{8}, ForKind::kSerial, store), store});
  ir::IRModule mod({{"f", PrimFunc({a}, body)}});
  std::vector<ir::Diagnostic> found = graph::well_formed(mod);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].message, "variable '%i' is bound twice");
  EXPECT_EQ(found[1].message, "variable '%i' is used but not bound");
  EXPECT_EQ(found[1].to_string(), "@f: variable '%i' is used but not bound\n    in: %i");
}

TEST(WellFormed, GraphFunctionProblems) {
  const std::string prims =
      "@k = prim_func(%X: Buffer[(4), float32], %Y: Buffer[(4), float32]) {\n  %Y[0] = %X[0];\n}\n"
      "@h = fn(%a: Tensor[(4), float32]) {\n  %a\n}\n"
      "@e = extern \"test_asm\" dps fn(Tensor[(4), float32], Tensor[(8), float32]) -> none payload \"\"\n";
  struct Case {
    std::string body, message;
  };
  std::vector<Case> cases = {
      {"@nope(%x)", "@main: reference to undefined function @nope"},
      {"call_dps<Tensor[(4), float32]>(@h, (%x,))",
       "@main: call_dps calls @h, a graph function; call_dps calls prim and extern functions"},
      {"call_dps<Tensor[(4), float32]>(@k, (%x, %x))",
       "@main: call_dps passes 2 inputs and 1 output to @k, which takes 2 buffer parameters"},
      {"@k(%x)", "@main: @k is a prim function; call it through call_dps"},
      {"@h(%x, %x)", "@main: @h takes 1 argument, got 2"},
      {"test.unary(%x, %x)", "@main: operator 'test.unary' takes 1 argument, got 2"},
      {"call_packed<float32>((%x,), nmae=\"f\")",
       "@main: operator 'call_packed' has no attribute 'nmae'; did you mean 'name'? (attributes: name)"},
      {"call_packed<float32>((%x,))", "@main: operator 'call_packed': required attribute 'name' is missing"},
      {"%z: _", "@main: variable '%z' is used but not bound"},
      {"(%x,).1", "@main: tuple index 1 is out of range for a tuple of 1 field"},
      {"if (%x) { %x } else { (%x,) }", "@main: the condition of if has type Tensor[(4), float32], not bool"},
      {"@h((%x,))", "@main: argument 0 has type (Tensor[(4), float32],) but the callee expects Tensor[(4), float32]"},
      {"test.unary(%x)", "@main: operator 'test.unary' has no type rule"},
      {"call_dps<Tensor[(4), float32]>(@k, ((%x, %x),))",
       "@main: call_dps input 0 of @k (buffer '%X') is not a tensor"},
      {"call_dps<Tensor[(4), int8]>(@k, (%x,))",
       "@main: call_dps output 0 of @k (buffer '%Y') has dtype int8, the buffer float32"},
      {"call_dps<Tensor[(5), float32]>(@k, (%x,))",
       "@main: call_dps output 0 of @k (buffer '%Y') has dimension 0 of 5, the buffer 4"},
      {"call_dps<Tensor[(4, 1), float32]>(@k, (%x,))",
       "@main: call_dps output 0 of @k (buffer '%Y') has rank 2, the buffer 1"},
      {"call_dps<Tensor[(4), float32]>(@e, (%x,))",
       "@main: call_dps output 0 of @e has type Tensor[(4), float32] but @e expects Tensor[(8), float32]"},
  };
  for (const auto& c : cases) {
    auto found = problems(prims + "@main = fn(%x: Tensor[(4), float32]) {\n  " + c.body + "\n}\n");
    ASSERT_FALSE(found.empty()) << c.body;
    EXPECT_EQ(found[0], c.message) << c.body;
  }
}

TEST(WellFormed, ExternKindsValidate) {
  EXPECT_EQ(problems("@e = extern \"picky\" dps fn() -> none payload \"\"\n"),
            std::vector<std::string>{"@e: payload must not be empty"});
  EXPECT_TRUE(problems("@e = extern \"picky\" dps fn() -> none payload \"x\"\n").empty());
  EXPECT_EQ(problems("@e = extern \"pikcy\" dps fn() -> none payload \"x\"\n"),
            std::vector<std::string>{
                "@e: no extern kind named 'pikcy' is registered or provided by a plugin; did you mean 'picky'?"});
}

TEST(TypeInference, FillsCheckedTypesAndResultTypes) {
  register_kinds();
  ir::IRModule mod = text::parse_module(
      "@pair = fn(%a: Tensor[(2), float32]) {\n  let %t = (%a, %a);\n  %t.1\n}\n"
      "@main = fn(%x: Tensor[(2), float32], %c: bool) {\n  if (%c) { @pair(%x) } else { %x }\n}\n",
      "t.loom");
  ir::IRModule typed = graph::check_module(mod);
  ir::TensorType t2 = tir::tensor_type({2}, DataType::Float(32));
  EXPECT_TRUE(structural_equal(downcast<graph::Function>(typed.lookup("pair"))->ret_type, t2));
  EXPECT_TRUE(structural_equal(downcast<graph::Function>(typed.lookup("main"))->ret_type, t2));
  // The let variable's type was inferred from its value.
  auto let = downcast<graph::Function>(typed.lookup("pair"))->body.as<graph::LetNode>();
  EXPECT_TRUE(structural_equal(let->value->checked_type, ir::TupleType({t2, t2})));
  // Filling checked types does not change structural identity.
  EXPECT_TRUE(structural_equal(typed.lookup("pair")->attrs, mod.lookup("pair")->attrs));
}

TEST(TypeInference, AProblemIsFoundAgainByTheNextInference) {
  // A type found with a problem is not cached on the node: inferring the
  // same module again reports it again instead of accepting the cached type.
  register_kinds();
  ir::IRModule mod = text::parse_module(
      "@double = fn(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  %x\n}\n"
      "@main = fn(%x: Tensor[(4), float32]) {\n  @double(%x, %x)\n}\n",
      "t.loom");
  for (int run = 0; run < 2; ++run) {
    std::vector<ir::Diagnostic> out;
    graph::infer_types(mod, &out);
    ASSERT_EQ(out.size(), 1u) << "run " << run;
    EXPECT_EQ(out[0].message, "calls a function of 1 parameter with 2 arguments") << "run " << run;
  }
}

TEST(TypeInference, CheckModuleListsEveryProblem) {
  register_kinds();
  ir::IRModule mod = text::parse_module("@f = prim_func(%A: Buffer[(4), float32]) {\n  %A[0, 0] = 1;\n}\n", "t.loom");
  try {
    graph::check_module(mod);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "2 problems:\n  @f: buffer '%A' has 1 dimension but is indexed with 2\n    in: %A[0, 0] = 1;\n"
              "  @f: stores a int64 value into buffer '%A' of float32\n    in: %A[0, 0] = 1;");
  }
}

}  // namespace loom
