// The reachability check against fake_ssh.sh, whose behaviour the host name picks.
#include "launcher/ssh_check.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(SshCheck, AllReachable) {
  EXPECT_TRUE(CheckSshReachability({"a", "b", "c"}, {}, 5, FAKE_SSH).empty());
}

TEST(SshCheck, NamesEachFailingHostWithSshsReason) {
  auto failures = CheckSshReachability({"ok1", "down1", "ok2", "denied1"}, {}, 5, FAKE_SSH);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].host, "down1");
  EXPECT_EQ(failures[0].reason, "ssh: connect to host down1 port 22: Connection refused");
  EXPECT_EQ(failures[1].host, "denied1");
  EXPECT_EQ(failures[1].reason, "denied1: Permission denied (publickey).");
}

TEST(SshCheck, ChecksHostsInParallel) {
  // Each meet* host waits until all eight run at once: checked one after another, the
  // first would give up waiting.
  const test::TempDir dir;
  const std::string& meet = dir.path();
  setenv("FAKE_SSH_MEET", meet.c_str(), 1);
  setenv("FAKE_SSH_MEET_COUNT", "8", 1);
  std::vector<std::string> hosts;
  for (int i = 0; i < 8; ++i) hosts.push_back("meet" + std::to_string(i));
  auto failures = CheckSshReachability(hosts, {}, 30, FAKE_SSH);
  unsetenv("FAKE_SSH_MEET");
  unsetenv("FAKE_SSH_MEET_COUNT");
  EXPECT_TRUE(failures.empty()) << failures[0].reason;
}

TEST(SshCheck, GivesUpOnAHostAfterTheTimeout) {
  auto start = Clock::now();
  auto failures = CheckSshReachability({"ok", "hang1"}, {}, 1, FAKE_SSH);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].host, "hang1");
  EXPECT_EQ(failures[0].reason, "no answer within 1 s");
  EXPECT_LT(SecondsSince(start), 5.0);
}

TEST(SshCheck, PassesBatchModeTimeoutPortAndKey) {
  const test::TempDir dir;
  std::string log = dir.File("ssh_log");
  setenv("FAKE_SSH_LOG", log.c_str(), 1);
  CheckSshReachability({"far"}, {2222, "/keys/id"}, 7, FAKE_SSH);
  unsetenv("FAKE_SSH_LOG");
  std::stringstream logged;
  logged << std::ifstream(log).rdbuf();
  // "--" ends ssh's options, so the host is read as the destination whatever its name.
  EXPECT_EQ(logged.str(), "-o BatchMode=yes -o ConnectTimeout=7 -p 2222 -i /keys/id -- far true\n");
}

TEST(SshCheck, DescribesTheFailureAndTheFix) {
  EXPECT_EQ(DescribeSshFailure({"hostB", "Connection refused"}, {2222, ""}),
            "cannot reach hostB over ssh (Connection refused): make `ssh -p 2222 -- hostB true` "
            "work from here without a password, or leave hostB out");
}

}  // namespace
}  // namespace horde::launcher
