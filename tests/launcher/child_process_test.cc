#include "launcher/child_process.h"

#include <gtest/gtest.h>

namespace horde::launcher {
namespace {

TEST(ChildProcess, FindsProgramsOnPath) {
  EXPECT_EQ(FindProgram("sh", {{"PATH", "/nonexistent:/bin"}}), "/bin/sh");
  EXPECT_EQ(FindProgram("sh", {{"PATH", "/nonexistent"}}), "");
  EXPECT_EQ(FindProgram("/bin/sh", {}), "/bin/sh");
  EXPECT_EQ(FindProgram("/etc/hostname-not-here", {}), "");
  EXPECT_EQ(FindProgram("passwd", {{"PATH", "/etc"}}), "");  // not executable
}

TEST(ChildProcess, CapturesOutputAndExitCode) {
  CapturedRun run = RunCaptured({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"},
                                std::chrono::seconds(10));
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.output, "out\nerr\n");
}

TEST(ChildProcess, StdinIsEmpty) {
  CapturedRun run = RunCaptured({"/bin/sh", "-c", "cat; echo done"}, std::chrono::seconds(10));
  EXPECT_EQ(run.output, "done\n");
}

TEST(ChildProcess, KillsWhatOutlivesTheTimeout) {
  auto start = std::chrono::steady_clock::now();
  // The background sleep holds the pipe open too: the whole group has to go.
  CapturedRun run = RunCaptured({"/bin/sh", "-c", "sleep 30 & sleep 30"},
                                std::chrono::milliseconds(300));
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, 128 + 9);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ChildProcess, LastLine) {
  EXPECT_EQ(LastLine("first\n  second line \n\n"), "second line");
  EXPECT_EQ(LastLine(""), "");
}

}  // namespace
}  // namespace horde::launcher
