// Host names are data: every source accepts DNS names, IPv4 and bracketed IPv6 addresses
// and rejects anything ssh, mpirun or a shell could read as more than a name.
#include "launcher/host_name.h"

#include <gtest/gtest.h>

#include "launcher/host_list.h"
#include "launcher/slurm.h"
#include "test_util.h"

namespace horde::launcher {
namespace {

// Names someone could slip into a hostfile, a Slurm variable or a discovery script.
const char* const kHostile[] = {"-oProxyCommand=touch${IFS}/tmp/x",
                                "-p2222",
                                "a;id",
                                "$(id)",
                                "`id`",
                                "a b",
                                "a\nb",
                                "a\tb",
                                "node|sh",
                                "a&b",
                                "a>b",
                                "node'1",
                                "node\"1",
                                "a/b",
                                "..",
                                "a..b",
                                ".a",
                                "a.",
                                "-a",
                                "a-",
                                "node_1",
                                "fe80::1",
                                "[fe80::1%eth0]",
                                "[::1",
                                "[nothex]",
                                "1.2.3",
                                "1.2.3.4.5",
                                "256.1.1.1",
                                "a\\b",
                                "ノード",
                                "a\x7f"};

TEST(HostName, AcceptsDnsNamesAndAddresses) {
  for (const char* name : {"node01", "n", "10.0.0.7", "gpu-7.lab.example.org", "a1-b2", "[::1]",
                           "[fe80::1]", "[2001:db8::7]", "localhost", "x--y"}) {
    EXPECT_EQ(HostNameProblem(name), std::nullopt) << name;
  }
  EXPECT_EQ(HostNameProblem(std::string(63, 'a') + "." + std::string(63, 'b')), std::nullopt);
}

TEST(HostName, RejectsAnythingElse) {
  for (const char* name : kHostile) EXPECT_NE(HostNameProblem(name), std::nullopt) << name;
  EXPECT_NE(HostNameProblem(""), std::nullopt);
  EXPECT_NE(HostNameProblem(std::string(64, 'a')), std::nullopt);   // a label > 63
  EXPECT_NE(HostNameProblem(std::string(300, 'a')), std::nullopt);  // a name > 253
  std::string long_name;
  for (int i = 0; i < 51; ++i) long_name += "abcd.";
  EXPECT_NE(HostNameProblem(long_name + "ab"), std::nullopt);  // 257 characters
}

TEST(HostName, SaysWhereWhatAndWhatIsAllowedOnOneLine) {
  EXPECT_USAGE_ERROR(CheckHostName("-oProxyCommand=x", "hosts.txt:3"),
                     "hosts.txt:3: host name '-oProxyCommand=x' is not allowed: it starts with "
                     "'-', which ssh and mpirun would read as an option; expected a DNS name");
  EXPECT_USAGE_ERROR(CheckHostName("a\nb", "-H"),
                     "host name 'a\\x0ab' is not allowed: it contains");
  EXPECT_USAGE_ERROR(CheckHostName("[fe80::1%eth0]", "-H"), "zone index");
  EXPECT_USAGE_ERROR(CheckHostName("$(id)", "SLURM_JOB_NODELIST"),
                     "SLURM_JOB_NODELIST: host name '$(id)'");
}

TEST(HostName, EverySourceChecksItsNames) {
  EXPECT_USAGE_ERROR(ParseHostList("ok:1,-oProxyCommand=touch${IFS}/tmp/x:1"),
                     "-H: host name '-oProxyCommand=touch${IFS}/tmp/x' is not allowed");
  EXPECT_USAGE_ERROR(ParseHostList("a;id"), "-H: host name 'a;id' is not allowed");
  EXPECT_USAGE_ERROR(ParseHostfile("ok slots=1\n\n$(id) slots=2\n", "hosts.txt"),
                     "hosts.txt:3: host name '$(id)' is not allowed");
  EXPECT_USAGE_ERROR(ParseHostfile("`id`\n", "h"), "h:1: host name '`id`' is not allowed");
  EXPECT_USAGE_ERROR(SlurmHosts({{"SLURM_JOB_NODELIST", "node[1-2],-oProxyCommand=x"},
                                 {"SLURM_TASKS_PER_NODE", "1(x3)"}}),
                     "SLURM_JOB_NODELIST: host name '-oProxyCommand=x' is not allowed");
}

TEST(HostName, BracketedIpv6TakesSlotsAfterTheBracket) {
  EXPECT_EQ(ParseHostList("[::1]:2,[fe80::1]"),
            (std::vector<Host>{{"[::1]", 2}, {"[fe80::1]", 1}}));
  EXPECT_USAGE_ERROR(ParseHostList("[fe80::1%eth0]:2"), "zone index");
  EXPECT_USAGE_ERROR(ParseHostList("fe80::1"), "host name 'fe80:' is not allowed");
}

TEST(HostName, QuotingShowsControlCharactersAndShortensLongNames) {
  EXPECT_EQ(QuotedForMessage("a\nb\x1b"), "'a\\x0ab\\x1b'");
  EXPECT_EQ(QuotedForMessage(std::string(400, 'x')), "'" + std::string(300, 'x') + "...'");
}

}  // namespace
}  // namespace horde::launcher
