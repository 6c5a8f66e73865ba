#include "loom/support/registration.h"

#include <gtest/gtest.h>

namespace loom {

TEST(RegistrationScope, RollsBackInReverseOrderUnlessCommitted) {
  std::vector<int> undone;
  {
    RegistrationScope scope("plugin_x");
    EXPECT_EQ(RegistrationScope::current_owner(), "plugin_x");
    RegistrationScope::record_undo([&] { undone.push_back(1); });
    RegistrationScope::record_undo([&] { undone.push_back(2); });
  }
  EXPECT_EQ(undone, (std::vector<int>{2, 1}));
  EXPECT_EQ(RegistrationScope::current_owner(), "core");

  undone.clear();
  {
    RegistrationScope scope("plugin_y");
    RegistrationScope::record_undo([&] { undone.push_back(1); });
    scope.commit();
  }
  EXPECT_TRUE(undone.empty());
}

TEST(RegistrationScope, WithoutScopeNothingIsRecorded) {
  bool ran = false;
  RegistrationScope::record_undo([&] { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(Capabilities, ResolverIsAskedAndMayDecline) {
  std::vector<std::string> asked;
  set_capability_resolver({[&](const std::string& capability) {
                             asked.push_back(capability);
                             return capability == "target:yes";
                           },
                           [](const std::string& kind) {
                             return kind == "target" ? std::vector<std::string>{"yes"} : std::vector<std::string>{};
                           }});
  EXPECT_TRUE(request_capability("target:yes"));
  EXPECT_FALSE(request_capability("target:no"));
  EXPECT_EQ(asked, (std::vector<std::string>{"target:yes", "target:no"}));
  EXPECT_EQ(available_capabilities("target"), (std::vector<std::string>{"yes"}));
  EXPECT_TRUE(available_capabilities("pass").empty());
  set_capability_resolver({});
  EXPECT_FALSE(request_capability("target:yes"));
  EXPECT_TRUE(available_capabilities("target").empty());
}

}  // namespace loom
