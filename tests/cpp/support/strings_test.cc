#include "loom/support/strings.h"

#include <gtest/gtest.h>

namespace loom {

TEST(Strings, SplitKeepsOrSkipsEmptyParts) {
  EXPECT_EQ(split("a::b:", ':'), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split("a::b:", ':', false), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(join({"x", "y", "z"}, ", "), "x, y, z");
  EXPECT_EQ(trim("  a b \n"), "a b");
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  EXPECT_EQ(edit_distance("tir.Vra", "tir.Var"), 1u);  // a transposition is one edit
  EXPECT_EQ(edit_distance("tir.Vra", "tir.Or"), 2u);
}

TEST(Strings, ClosestMatchSuggestsOnlyPlausibleTypos) {
  std::vector<std::string> names = {"hello.greet", "hello.add", "llvm"};
  EXPECT_EQ(closest_match("hello.gret", names), "hello.greet");
  EXPECT_EQ(closest_match("lvm", names), "llvm");
  EXPECT_EQ(closest_match("completely_else", names), "");
  EXPECT_EQ(did_you_mean("hello.ad", names), "; did you mean 'hello.add'?");
  EXPECT_EQ(did_you_mean("zzzzzzzz", names), "");
}

}  // namespace loom
