#include "launcher/host_discovery.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/elastic_hosts.h"
#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

std::string ErrorOf(const std::string& output) {
  try {
    ParseDiscoveryOutput(output, "./d.sh", 2);
  } catch (const DiscoveryError& error) {
    return error.what();
  }
  return "";
}

TEST(HostDiscovery, ParsesHostsSlotsAndDefaults) {
  std::vector<Host> expected = {{"node1", 4}, {"node2", 2}, {"[fe80::1]", 8}, {"10.0.0.7", 1}};
  EXPECT_EQ(ParseDiscoveryOutput("node1:4\n\n  node2 \r\n[fe80::1]:8\n10.0.0.7:1", "d", 2),
            expected);
  EXPECT_TRUE(ParseDiscoveryOutput("", "d", 1).empty());
}

TEST(HostDiscovery, RejectsGarbageNamingTheLine) {
  EXPECT_EQ(ErrorOf("node1\nnode2:0\n"),
            "host discovery script ./d.sh, line 2: expected 'host' or 'host:slots' with slots "
            "from 1 to 1000000, got 'node2:0'");
  EXPECT_NE(
      ErrorOf("-oProxyCommand=id\n").find("line 1: host name '-oProxyCommand=id' is not allowed"),
      std::string::npos);
  EXPECT_NE(ErrorOf("a;id:2\n").find("host name 'a;id' is not allowed"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1\na:2\n").find("line 2: host 'a' is listed twice"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(2 << 20, 'a')).find("printed 2097152 bytes"), std::string::npos);
}

std::string DiscoveryErrorOf(const std::string& script) {
  try {
    DiscoverHosts(script, 1, std::chrono::seconds(5));
  } catch (const DiscoveryError& error) {
    return error.what();
  }
  return "";
}

TEST(HostDiscovery, ReportsAMissingOrNotExecutableScript) {
  EXPECT_EQ(DiscoveryErrorOf("/nonexistent/discover.sh"),
            "host discovery script /nonexistent/discover.sh does not exist: expected the path "
            "of an executable that prints 'host:slots' lines");
  horde::test::TempDir dir;
  const std::string text_file = dir.File("hosts.txt");
  std::ofstream(text_file) << "localhost:2\n";
  std::filesystem::permissions(
      text_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_NE(DiscoveryErrorOf(text_file).find("is not an executable file"), std::string::npos);
  EXPECT_NE(DiscoveryErrorOf("/").find("is not an executable file"), std::string::npos);
}

TEST(HostDiscovery, ReportsAFailingScript) {
  EXPECT_EQ(DiscoveryErrorOf("/bin/false"),
            "host discovery script /bin/false failed with exit code 1");
}

TEST(HostDiscovery, ReadsHostsFromStdoutOnlyAndQuotesStderrOnFailure) {
  horde::test::TempDir dir;
  std::string script = dir.File("d.sh");
  std::ofstream(script) << "#!/bin/sh\necho 'warning: inventory slow' >&2\necho localhost:2\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  EXPECT_EQ(DiscoverHosts(script, 1, std::chrono::seconds(5)),
            (std::vector<Host>{{"localhost", 2}}));
  std::ofstream(script) << "#!/bin/sh\necho localhost:2\necho 'inventory down' >&2\nexit 4\n";
  EXPECT_EQ(DiscoveryErrorOf(script),
            "host discovery script " + script + " failed with exit code 4: 'inventory down'");
}

TEST(ElasticHosts, ALocalFailureWithholdsOneSlotARemoteOneTheHost) {
  HostPool pool("vm", {"10.1.1.1"});
  std::vector<Host> discovered = {{"localhost", 3}, {"node2", 2}};
  auto now = HostPool::Clock::now();
  pool.RecordFailure("localhost", discovered, now);
  EXPECT_EQ(pool.Usable(discovered), (std::vector<Host>{{"localhost", 2}, {"node2", 2}}));
  EXPECT_EQ(pool.RecordFailure("node2", discovered, now), "host node2 is left out from now on");
  EXPECT_EQ(pool.Usable(discovered), (std::vector<Host>{{"localhost", 2}}));
  EXPECT_TRUE(pool.EndCooldowns(now + std::chrono::hours(24 * 365)).empty());
  // More slots reported for this machine than at the failure: they are usable again.
  EXPECT_EQ(pool.Usable({{"localhost", 4}}), (std::vector<Host>{{"localhost", 4}}));
}

// Horovod's cool-down: the n-th time, MIN * 2^n + U(0,1) * MIN seconds, within [MIN, MAX].
TEST(ElasticHosts, ALeftOutHostComesBackAfterItsCooldownWhichDoubles) {
  HostPool pool("vm", {}, CooldownRange{1, 5});
  std::vector<Host> discovered = {{"node1", 1}, {"node2", 2}};
  auto t0 = HostPool::Clock::now();
  auto at = [&](double seconds) {
    return t0 + std::chrono::duration_cast<HostPool::Clock::duration>(
                    std::chrono::duration<double>(seconds));
  };
  // First time: 2 to 3 s (MIN * 2 plus up to MIN of jitter), printed with one decimal.
  const std::string first = pool.RecordFailure("node2", discovered, t0);
  const std::string prefix = "host node2 is left out for ";
  ASSERT_EQ(first.rfind(prefix, 0), 0u) << first;
  const double seconds = std::stod(first.substr(prefix.size()));
  EXPECT_GE(seconds, 2.0) << first;
  EXPECT_LE(seconds, 3.0) << first;
  EXPECT_EQ(pool.Usable(discovered), (std::vector<Host>{{"node1", 1}}));
  EXPECT_TRUE(pool.EndCooldowns(at(1.99)).empty());
  EXPECT_EQ(pool.EndCooldowns(at(3.01)), std::vector<std::string>{"node2"});
  EXPECT_EQ(pool.Usable(discovered), discovered);
  pool.Exclude("node2", at(10));  // second time: 4 to 5 s
  EXPECT_TRUE(pool.EndCooldowns(at(13.99)).empty());
  EXPECT_EQ(pool.EndCooldowns(at(15.01)), std::vector<std::string>{"node2"});
  EXPECT_EQ(pool.Exclude("node2", at(20)),  // third time: 8 to 9 s, capped at MAX
            "host node2 is left out for 5.0 s (--blacklist-cooldown-range)");
  EXPECT_TRUE(pool.EndCooldowns(at(24.99)).empty());
  EXPECT_EQ(pool.EndCooldowns(at(25)), std::vector<std::string>{"node2"});
}

TEST(ElasticHosts, TakesSlotsInOrderAndMapsRanksToHosts) {
  std::vector<Host> hosts = {{"a", 2}, {"b", 2}, {"c", 1}};
  EXPECT_EQ(TakeSlots(hosts, 3), (std::vector<Host>{{"a", 2}, {"b", 1}}));
  EXPECT_EQ(HostOfRank(hosts, 0), "a");
  EXPECT_EQ(HostOfRank(hosts, 3), "b");
  EXPECT_EQ(HostOfRank(hosts, 4), "c");
  EXPECT_EQ(HostOfRank(hosts, 5), "");
}

}  // namespace
}  // namespace horde::launcher
