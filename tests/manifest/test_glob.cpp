// The manifest's name patterns (manifest/glob.h): documented cases, and on Linux the same answers
// as POSIX fnmatch() (flags 0) over random patterns and names, which the Linux checker used before
// the matcher had to run on Windows too.
#include "manifest/glob.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#ifndef _WIN32
#include <fnmatch.h>
#endif

namespace {

using infer::manifest::glob_match;

TEST(Glob, DocumentedCases) {
  EXPECT_TRUE(glob_match("NVIDIA H200*", "NVIDIA H200 NVL"));
  EXPECT_FALSE(glob_match("NVIDIA H200*", "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(glob_match("Debian GNU/Linux 1?", "Debian GNU/Linux 12"));
  EXPECT_FALSE(glob_match("Debian GNU/Linux 1?", "Debian GNU/Linux 1"));
  EXPECT_TRUE(glob_match("x86_6[0-9]", "x86_64"));
  EXPECT_FALSE(glob_match("x86_6[!4]", "x86_64"));
  EXPECT_TRUE(glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(glob_match("a\\*b", "axb"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_TRUE(glob_match("[", "["));   // an unclosed bracket is literal
  EXPECT_TRUE(glob_match("[]]", "]"));  // ']' first in a set is a member
  EXPECT_FALSE(glob_match("Windows*", "windows 11"));  // case matters
}

// Worst case for naive backtracking: many stars against a long non-matching text. Must finish.
TEST(Glob, ManyStarsDoNotBacktrackExponentially) {
  const std::string pattern = std::string(30, '*').replace(0, 0, "a") + "b";
  EXPECT_FALSE(glob_match(pattern, std::string(5000, 'a')));
}

#ifndef _WIN32
TEST(Glob, AgreesWithFnmatch) {
  std::mt19937 rng(std::random_device{}());
  const std::string pattern_chars = "ab*?[]!-\\";
  const std::string text_chars = "ab-]![*?\\";
  std::uniform_int_distribution<int> len(0, 8);
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string p, t;
    for (int n = len(rng); n > 0; --n) p += pattern_chars[rng() % pattern_chars.size()];
    for (int n = len(rng); n > 0; --n) t += text_chars[rng() % text_chars.size()];
    if (!p.empty() && p.back() == '\\') continue;  // a trailing backslash: fnmatch's behaviour is unspecified
    // An unclosed '[' is a malformed pattern, where glibc is not consistent ("[*" matches "[x",
    // "[*-" does not match "[-"): compared only by the documented cases above.
    const std::size_t open = p.rfind('[');
    if (open != std::string::npos && p.find(']', open + 1) == std::string::npos) continue;
    const bool want = fnmatch(p.c_str(), t.c_str(), 0) == 0;
    ASSERT_EQ(glob_match(p, t), want) << "pattern '" << p << "' text '" << t << "'";
    ++checked;
  }
  EXPECT_GT(checked, 10000);
}
#endif

}  // namespace
