#include <gtest/gtest.h>

#include "loom/object/reflection.h"
#include "loom/support/registration.h"
#include "test_nodes.h"

namespace loom {
using namespace loom::test;  // NOLINT

LOOM_REGISTER_OBJECT(TIntNode);
LOOM_REGISTER_OBJECT(TAddNode);
LOOM_REGISTER_OBJECT(TVarNode);
LOOM_REGISTER_OBJECT(TLetNode);

TEST(TypeRegistry, StaticRegistrationMakesKeysKnownBeforeUse) {
  EXPECT_NE(TypeRegistry::find("test.Let"), nullptr);
  EXPECT_NE(TypeRegistry::find("Array"), nullptr);
  EXPECT_NE(TypeRegistry::find("Function"), nullptr);
}

TEST(TypeRegistry, KeysIndicesAndParents) {
  uint32_t expr = TExprNode::runtime_type_index();
  uint32_t var = TVarNode::runtime_type_index();
  const TypeInfo& info = TypeRegistry::info("test.Var");
  EXPECT_EQ(info.index, var);
  EXPECT_EQ(info.parent_index, expr);
  EXPECT_EQ(TypeRegistry::info(info.parent_index).key, "test.Expr");
  EXPECT_TRUE(TypeRegistry::is_derived_from(var, expr));
  EXPECT_TRUE(TypeRegistry::is_derived_from(var, Object::runtime_type_index()));
  EXPECT_FALSE(TypeRegistry::is_derived_from(expr, var));
  EXPECT_EQ(info.owner, "core");
}

TEST(TypeRegistry, IsInstanceAndDowncast) {
  TExpr v = Var("x");
  EXPECT_TRUE(v->is_instance<TVarNode>());
  EXPECT_TRUE(v->is_instance<TExprNode>());
  EXPECT_FALSE(v->is_instance<TIntNode>());
  EXPECT_EQ(v->type_key(), "test.Var");
  EXPECT_NE(v.as<TVarNode>(), nullptr);
  EXPECT_EQ(v.as<TIntNode>(), nullptr);
  try {
    downcast<Array>(v);
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()), "expected Array, got test.Var");
  }
}

TEST(TypeRegistry, UnknownKeySuggests) {
  TVarNode::runtime_type_index();
  try {
    TypeRegistry::info("test.Vra");
    FAIL();
  } catch (const LookupError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown object type 'test.Vra'; did you mean 'test.Var'?");
  }
}

TEST(TypeRegistry, SameKeyWithAnotherParentIsAnError) {
  TIntNode::runtime_type_index();
  auto describe = [](TypeInfo&) {};
  EXPECT_EQ(TypeRegistry::register_type("test.Int", TExprNode::runtime_type_index(), describe),
            TIntNode::runtime_type_index());
  try {
    TypeRegistry::register_type("test.Int", Object::runtime_type_index(), describe);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already registered with parent 'test.Expr'"), std::string::npos) << e.what();
  }
}

TEST(TypeRegistry, RolledBackRegistrationFreesTheKey) {
  auto describe = [](TypeInfo&) {};
  {
    RegistrationScope scope("some_plugin");
    TypeRegistry::register_type("test.Transient", 0, describe);
    EXPECT_EQ(TypeRegistry::info("test.Transient").owner, "some_plugin");
  }
  EXPECT_EQ(TypeRegistry::find("test.Transient"), nullptr);
  // The key can be registered again afterwards.
  EXPECT_NO_THROW(TypeRegistry::register_type("test.Transient", TExprNode::runtime_type_index(), describe));
}

TEST(Reflection, FieldsAreInheritedWithTypesAndDocs) {
  const TypeInfo& info = TypeRegistry::info(TIntNode::runtime_type_index());
  ASSERT_EQ(info.fields.size(), 2u);
  EXPECT_EQ(info.fields[0].name, "dtype");
  EXPECT_EQ(info.fields[0].type, "dtype");
  EXPECT_EQ(info.fields[1].name, "value");
  EXPECT_EQ(info.fields[1].type, "int");
  EXPECT_EQ(info.fields[1].doc, "the constant");
  const TypeInfo& add = TypeRegistry::info(TAddNode::runtime_type_index());
  EXPECT_EQ(add.field("a")->type, "test.Expr");
  EXPECT_EQ(TypeRegistry::info(TVarNode::runtime_type_index()).field("name")->type, "str");
  EXPECT_EQ(TypeRegistry::info(TVarNode::runtime_type_index()).structural, StructuralKind::kBinding);
}

namespace {
// A subtype that declares no fields of its own.
class TNegIntNode : public TIntNode {
 public:
  LOOM_OBJECT(TNegIntNode, TIntNode, "test.NegInt");
};
}  // namespace

TEST(Reflection, SubtypeWithoutReflectInheritsFieldsOnce) {
  const TypeInfo& info = TypeRegistry::info(TNegIntNode::runtime_type_index());
  ASSERT_EQ(info.fields.size(), 2u);
  EXPECT_EQ(info.fields[0].name, "dtype");
  EXPECT_EQ(info.fields[1].name, "value");
}

TEST(Reflection, GettersSettersAndCreatorRebuildAnObjectGenerically) {
  TExpr original = Add(Int(4), Int(5));
  const TypeInfo& info = TypeRegistry::info(original->type_index());
  ObjectPtr<Object> copy = info.create();
  for (const auto& field : info.fields) field.set(copy.get(), field.get(original.get()));
  const auto* add = static_cast<const TAddNode*>(copy.get());
  EXPECT_EQ(add->a.as<TIntNode>()->value, 4);
  EXPECT_EQ(add->b.as<TIntNode>()->value, 5);
  EXPECT_EQ(copy->type_key(), "test.Add");
}

TEST(Reflection, SetterChecksTheFieldType) {
  ObjectPtr<Object> node = TypeRegistry::info("test.Int").create();
  try {
    TypeRegistry::info("test.Int").field("value")->set(node.get(), Any("seven"));
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()), "field 'value' of test.Int: expected int, got str 'seven'");
  }
  try {
    TypeRegistry::info("test.Add").field("a")->set(node.get(), Any());
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()), "field 'a' of test.Add: expected test.Expr, got none");
  }
  try {
    TypeRegistry::info("test.Add").field("a")->set(node.get(), Any(Array({})));
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()), "field 'a' of test.Add: expected test.Expr, got Array");
  }
}

TEST(Object, CopyStartsWithItsOwnCount) {
  auto node = make_object<TIntNode>();
  node->value = 3;
  ObjectPtr<TIntNode> alias = node;
  EXPECT_EQ(node->use_count(), 2);
  TIntNode copy(*node);
  EXPECT_EQ(copy.use_count(), 0);
  EXPECT_EQ(copy.type_index(), TIntNode::runtime_type_index());
  EXPECT_EQ(copy.value, 3);
}

}  // namespace loom
