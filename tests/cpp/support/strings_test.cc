#include "loom/support/strings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace loom {

TEST(Strings, SplitKeepsOrSkipsEmptyParts) {
  EXPECT_EQ(split("a::b:", ':'), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split("a::b:", ':', false), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(join({"x", "y", "z"}, ", "), "x, y, z");
  EXPECT_EQ(trim("  a b \n"), "a b");
}

TEST(Strings, CIdentifiers) {
  for (const char* yes : {"relu", "_x", "a1_b2", "__loom_asm_f"}) EXPECT_TRUE(is_c_identifier(yes)) << yes;
  for (const char* no : {"", "1a", "my-kernel", "a.b", "a b"}) EXPECT_FALSE(is_c_identifier(no)) << no;
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  EXPECT_EQ(edit_distance("tir.Vra", "tir.Var"), 1u);  // a transposition is one edit
  EXPECT_EQ(edit_distance("tir.Vra", "tir.Or"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting", 2), 2u);  // capped at the limit
  EXPECT_EQ(edit_distance("abcd", "badc"), 2u);          // two transpositions
}

TEST(Strings, ClosestMatchSuggestsOnlyPlausibleTypos) {
  std::vector<std::string> names = {"hello.greet", "hello.add", "llvm"};
  EXPECT_EQ(closest_match("hello.gret", names), "hello.greet");
  EXPECT_EQ(closest_match("lvm", names), "llvm");
  EXPECT_EQ(closest_match("completely_else", names), "");
  EXPECT_EQ(did_you_mean("hello.ad", names), "; did you mean 'hello.add'?");
  EXPECT_EQ(did_you_mean("zzzzzzzz", names), "");
}

TEST(Strings, SuggestionsCostBoundedTimeForHugeNames) {
  // Two 100,000-character names once built a 10^10-cell table; now a name
  // over kMaxSuggestedName gets no suggestion, whatever the candidates.
  std::string huge(100000, 'a'), other = huge;
  other.back() = 'b';
  EXPECT_EQ(closest_match(huge, {other}), "");
  EXPECT_EQ(closest_match("abc", {other, "abd"}), "abd");
  std::string long_name(kMaxSuggestedName, 'x'), typo = long_name;
  typo[3] = 'y';
  EXPECT_EQ(closest_match(typo, {long_name}), long_name);  // at the bound, still suggested
}

TEST(Strings, SourceExcerptShowsAWindowOfALongLine) {
  std::string line(100000, '(');
  line[50000] = 'x';
  std::string excerpt = source_excerpt("first\n" + line + "\n", 2, 50001);
  EXPECT_LT(excerpt.size(), 300u);
  // The caret sits under the 'x'.
  size_t text = excerpt.find('\n', 1), caret = excerpt.rfind('^');
  ASSERT_NE(text, std::string::npos);
  EXPECT_EQ(excerpt[caret - text + 0], 'x') << excerpt;
  EXPECT_EQ(source_excerpt("ab\ncd", 2, 2), "\n  cd\n   ^");
}

TEST(Strings, SourceExcerptClampsAColumnPastTheLine) {
  // yaml-cpp reported column 349 on a 198-byte line (found by the config
  // fuzz target): the caret goes just after the line, short or long.
  EXPECT_EQ(source_excerpt("ab\ncd", 2, 349), "\n  cd\n    ^");
  std::string line(200, 'x');
  std::string excerpt = source_excerpt(line, 1, 5000);
  EXPECT_LT(excerpt.size(), 300u);
  EXPECT_EQ(excerpt.back(), '^');
}

TEST(Strings, FormatDoubleIsShortestAndRoundTripsExactly) {
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(10.0), "10.0");
  EXPECT_EQ(format_double(1e20), "1e+20");
  EXPECT_EQ(format_double(-0.00125), "-0.00125");
  EXPECT_EQ(format_double(0.02907371520996094), "0.02907371520996094");
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (std::isnan(d)) continue;
    std::string text = format_double(d);
    ASSERT_EQ(std::strtod(text.c_str(), nullptr), d) << text;
    double scaled = std::ldexp(static_cast<double>(rng() >> 11), -static_cast<int>(rng() % 80));  // near 1e-4..1
    ASSERT_EQ(std::strtod(format_double(scaled).c_str(), nullptr), scaled) << format_double(scaled);
  }
}

}  // namespace loom
