#include "launcher/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>

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

TEST(ChildProcess, KeepsStderrApartWhenAsked) {
  CapturedRun run = RunCaptured({"/bin/sh", "-c", "echo out; echo err >&2"},
                                std::chrono::seconds(10), /*stderr_apart=*/true);
  EXPECT_EQ(run.output, "out\n");
  EXPECT_EQ(run.error_output, "err\n");
}

// horderun blocks the signals its loop waits for and may ignore others; its children
// start with neither.
TEST(ChildProcess, StartsWithDefaultSignalsAndNoneBlocked) {
  sigset_t blocked, old_mask;
  sigemptyset(&blocked);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&blocked, signal);
  sigprocmask(SIG_BLOCK, &blocked, &old_mask);
  struct sigaction ignore = {}, old_action;
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGQUIT, &ignore, &old_action);
  CapturedRun run = RunCaptured({"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"},
                                std::chrono::seconds(10));
  sigaction(SIGQUIT, &old_action, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  EXPECT_EQ(run.output, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST(ChildProcess, IsPolledWithoutBlocking) {
  CapturedChild child({"/bin/sh", "-c", "sleep 0.3; echo done"}, std::chrono::seconds(10));
  EXPECT_FALSE(child.Poll(std::chrono::milliseconds(0)));
  while (!child.Poll(std::chrono::milliseconds(50))) {
  }
  EXPECT_EQ(child.run().output, "done\n");
  EXPECT_EQ(child.run().exit_code, 0);
}

TEST(ChildProcess, LastLine) {
  EXPECT_EQ(LastLine("first\n  second line \n\n"), "second line");
  EXPECT_EQ(LastLine(""), "");
}

}  // namespace
}  // namespace horde::launcher
