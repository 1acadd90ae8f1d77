#include "launcher/host_list.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "test_util.h"
#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

using Hosts = std::vector<Host>;

TEST(HostList, ParsesHostsAndSlots) {
  EXPECT_EQ(ParseHostList("node1:4,node2:2"), (Hosts{{"node1", 4}, {"node2", 2}}));
  EXPECT_EQ(ParseHostList("a,b:3"), (Hosts{{"a", 1}, {"b", 3}}));
  EXPECT_EQ(ParseHostList("10.0.0.1:2"), (Hosts{{"10.0.0.1", 2}}));
}

TEST(HostList, RejectsBadEntries) {
  EXPECT_USAGE_ERROR(ParseHostList("a:x"), "'a:x' has slots 'x', expected a positive integer");
  EXPECT_USAGE_ERROR(ParseHostList(":2"), "':2' has no host name");
  EXPECT_USAGE_ERROR(ParseHostList("a:0"), "has slots '0'");
  EXPECT_USAGE_ERROR(ParseHostList("a:-1"), "has slots '-1'");
  EXPECT_USAGE_ERROR(ParseHostList("a:"), "has slots ''");
  EXPECT_USAGE_ERROR(ParseHostList("a:2,,b:2"), "has no host name");
  EXPECT_USAGE_ERROR(ParseHostList("a:2,"), "has an empty entry");
  EXPECT_USAGE_ERROR(ParseHostList(""), "has an empty entry");
  EXPECT_USAGE_ERROR(ParseHostList("a b:2"), "host name 'a b' is not allowed: it contains ' '");
  EXPECT_USAGE_ERROR(ParseHostList("a:2,b:1,a:1"), "host 'a' is listed twice");
}

TEST(Hostfile, ParsesLinesCommentsAndBlanks) {
  std::string text =
      "# cluster\n"
      "node1 slots=4\n"
      "\n"
      "   node2   slots=2   # the small one\n"
      "node3\n";
  EXPECT_EQ(ParseHostfile(text, "hosts.txt"), (Hosts{{"node1", 4}, {"node2", 2}, {"node3", 1}}));
}

TEST(Hostfile, NamesTheMalformedLine) {
  EXPECT_USAGE_ERROR(ParseHostfile("a slots=2\nb slots=x\n", "hosts.txt"),
                     "--hostfile hosts.txt:2: expected 'host slots=N', got 'b slots=x'");
  EXPECT_USAGE_ERROR(ParseHostfile("a\n\nb 4\n", "h"), "h:3: expected 'host slots=N'");
  EXPECT_USAGE_ERROR(ParseHostfile("a slots=2 extra\n", "h"), "h:1:");
  EXPECT_USAGE_ERROR(ParseHostfile("a slots=0\n", "h"), "h:1:");
  EXPECT_USAGE_ERROR(ParseHostfile("# nothing\n\n", "h"), "--hostfile h lists no hosts");
  EXPECT_USAGE_ERROR(ParseHostfile("a\na slots=2\n", "h"), "host 'a' is listed twice");
}

TEST(Hostfile, ReadsAFileAndNamesAMissingOne) {
  const test::TempDir dir;
  std::string path = dir.File("hostfile");
  std::ofstream(path) << "x slots=3\n";
  EXPECT_EQ(ReadHostfile(path), (Hosts{{"x", 3}}));
  std::remove(path.c_str());
  EXPECT_USAGE_ERROR(ReadHostfile(path),
                     "--hostfile: cannot read '" + path + "': No such file or directory");
}

TEST(HostList, FormatsAndCounts) {
  Hosts hosts = {{"a", 2}, {"b", 3}};
  EXPECT_EQ(FormatHostList(hosts), "a:2,b:3");
  EXPECT_EQ(TotalSlots(hosts), 5);
}

TEST(HostList, RecognizesThisMachine) {
  std::vector<std::string> addresses = {"10.0.0.7", "fe80::1"};
  for (const char* name :
       {"localhost", "127.0.0.1", "127.0.1.1", "::1", "gpu7", "gpu7.lab.org", "10.0.0.7"}) {
    EXPECT_TRUE(IsLocalHost(name, "gpu7.lab.org", addresses)) << name;
  }
  for (const char* name : {"gpu8", "gpu", "10.0.0.8", "localhost2"}) {
    EXPECT_FALSE(IsLocalHost(name, "gpu7.lab.org", addresses)) << name;
  }
}

}  // namespace
}  // namespace horde::launcher
