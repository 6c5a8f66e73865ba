#include "loom/object/function.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include "loom/support/registration.h"

namespace loom {

using test::error_of;

TEST(Function, PackedCall) {
  Function sum([](const Any* args, int32_t n) {
    int64_t total = 0;
    for (int32_t i = 0; i < n; ++i) total += args[i].as_int();
    return Any(total);
  });
  EXPECT_EQ(sum(1, 2, 3).as_int(), 6);
  EXPECT_EQ(sum().as_int(), 0);
}

TEST(Function, TypedWrapperConvertsAndChecks) {
  Function f =
      Function::typed([](int64_t a, double b, std::string s) { return s + std::to_string(a + int64_t(b)); }, "test.f");
  EXPECT_EQ(f(2, 3.0, "n=").as_string(), "n=5");
  EXPECT_EQ(f(2, 3, "n=").as_string(), "n=5");  // int widens to float
  EXPECT_EQ(error_of([&] { f(1, 2.0); }), "function 'test.f' takes 3 arguments, got 2");
  EXPECT_EQ(error_of([&] { f("1", 2.0, "x"); }), "argument 0 of function 'test.f': expected int, got str '1'");
  Function v = Function::typed([](DataType) {}, "test.void");
  EXPECT_TRUE(v(DataType::Float(32)).is_none());
}

TEST(FunctionRegistry, RegisterFindListRemove) {
  FunctionRegistry::register_function("test.registry.twice", Function::typed([](int64_t x) { return 2 * x; }),
                                      "doubles");
  EXPECT_EQ(FunctionRegistry::get("test.registry.twice")(21).as_int(), 42);
  auto entry = FunctionRegistry::entry("test.registry.twice");
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->doc, "doubles");
  EXPECT_EQ(entry->owner, "core");
  auto names = FunctionRegistry::list();
  EXPECT_NE(std::find(names.begin(), names.end(), "test.registry.twice"), names.end());
  EXPECT_TRUE(FunctionRegistry::remove("test.registry.twice"));
  EXPECT_FALSE(FunctionRegistry::find("test.registry.twice"));
}

TEST(FunctionRegistry, RegisteringANameTwiceIsAnErrorNamingTheOwner) {
  {
    RegistrationScope scope("first_plugin");
    FunctionRegistry::register_function("test.once", Function::typed([] { return 1; }));
    scope.commit();
  }
  EXPECT_EQ(error_of([] { FunctionRegistry::register_function("test.once", Function::typed([] { return 2; })); }),
            "function 'test.once' is already registered by first_plugin; a name is registered once (pass "
            "allow_override=true to replace it deliberately)");
  EXPECT_EQ(FunctionRegistry::get("test.once")().as_int(), 1);
}

TEST(FunctionRegistry, OverrideIsExplicitAndRollsBackToThePrevious) {
  FunctionRegistry::register_function("test.swap", Function::typed([] { return 1; }));
  {
    RegistrationScope scope("failing_plugin");
    FunctionRegistry::register_function("test.swap", Function::typed([] { return 2; }), "", true);
    EXPECT_EQ(FunctionRegistry::get("test.swap")().as_int(), 2);
  }  // not committed: rolled back
  EXPECT_EQ(FunctionRegistry::get("test.swap")().as_int(), 1);
  EXPECT_EQ(FunctionRegistry::entry("test.swap")->owner, "core");
}

TEST(FunctionRegistry, UnknownNameSuggestsTheClosest) {
  FunctionRegistry::register_function("test.lookup.alpha", Function::typed([] { return 1; }));
  EXPECT_EQ(error_of([] { FunctionRegistry::get("test.lookup.alpah"); }),
            "no function named 'test.lookup.alpah' is registered or provided by a plugin; did you mean "
            "'test.lookup.alpha'?");
}

TEST(FunctionRegistry, InvalidNamesAreRefused) {
  for (const char* name : {"", "has space", ".leading", "trailing.", "semi;colon"}) {
    EXPECT_NE(error_of([&] {
                FunctionRegistry::register_function(name, Function::typed([] { return 1; }));
              }).find("invalid function name"),
              std::string::npos)
        << name;
  }
}

}  // namespace loom
