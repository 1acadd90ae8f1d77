#include "launcher/shell_words.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace horde::launcher {
namespace {

using Words = std::vector<std::string>;

TEST(ShellWords, SplitsAtWhitespace) {
  EXPECT_EQ(SplitShellWords("  --mca btl\ttcp,self \n", "x"), (Words{"--mca", "btl", "tcp,self"}));
  EXPECT_EQ(SplitShellWords("", "x"), Words{});
}

TEST(ShellWords, QuotesAndBackslashesProtect) {
  EXPECT_EQ(SplitShellWords(R"(-x 'A=b c' "d \"e\"" f\ g '')", "x"),
            (Words{"-x", "A=b c", "d \"e\"", "f g", ""}));
  EXPECT_EQ(SplitShellWords(R"("a"'b'c)", "x"), Words{"abc"});
}

TEST(ShellWords, UnterminatedQuoteIsAUsageError) {
  EXPECT_USAGE_ERROR(SplitShellWords("--mca 'btl tcp", "--mpi-args"),
                     "--mpi-args has an unterminated ' quote");
}

TEST(ShellWords, QuotingRoundTrips) {
  Words words = {"plain", "with space", "it's", "", "$HOME", "a,b:c/d"};
  EXPECT_EQ(JoinShellWords(words), R"(plain 'with space' 'it'\''s' '' '$HOME' a,b:c/d)");
  EXPECT_EQ(SplitShellWords(JoinShellWords(words), "x"), words);
}

}  // namespace
}  // namespace horde::launcher
