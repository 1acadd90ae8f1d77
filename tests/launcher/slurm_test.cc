#include "launcher/slurm.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_util.h"

namespace horde::launcher {
namespace {

using Names = std::vector<std::string>;

TEST(SlurmNodeList, ExpandsZeroPaddedRanges) {
  EXPECT_EQ(ExpandNodeList("node[01-04]"), (Names{"node01", "node02", "node03", "node04"}));
  EXPECT_EQ(ExpandNodeList("n[8-11]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(ExpandNodeList("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
}

TEST(SlurmNodeList, ExpandsListsInsideAndOutsideBrackets) {
  EXPECT_EQ(ExpandNodeList("a[1,3-5],b"), (Names{"a1", "a3", "a4", "a5", "b"}));
  EXPECT_EQ(ExpandNodeList("login,gpu[2-3],cpu[7]"), (Names{"login", "gpu2", "gpu3", "cpu7"}));
  EXPECT_EQ(ExpandNodeList("single"), Names{"single"});
}

TEST(SlurmNodeList, ExpandsSeveralBracketsAndSuffixes) {
  EXPECT_EQ(ExpandNodeList("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(ExpandNodeList("x[1-2]-ib"), (Names{"x1-ib", "x2-ib"}));
}

TEST(SlurmNodeList, RejectsMalformedLists) {
  for (const char* bad :
       {"node[01-", "node01]", "n[a-b]", "n[3-1]", "n[]", "a,,b", "", "n[1-99999999]"}) {
    EXPECT_THROW(ExpandNodeList(bad), std::invalid_argument) << bad;
  }
}

TEST(SlurmTasksPerNode, ExpandsRepeats) {
  EXPECT_EQ(ExpandTasksPerNode("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(ExpandTasksPerNode("4"), std::vector<int>{4});
  EXPECT_EQ(ExpandTasksPerNode("1,8(x2)"), (std::vector<int>{1, 8, 8}));
}

TEST(SlurmTasksPerNode, RejectsMalformedCounts) {
  for (const char* bad : {"", "x", "2(x3", "2(3)", "0", "2(x0)", "-1", "2,,1"}) {
    EXPECT_THROW(ExpandTasksPerNode(bad), std::invalid_argument) << bad;
  }
}

TEST(SlurmHosts, NoneOutsideAnAllocation) {
  EXPECT_FALSE(SlurmHosts({{"PATH", "/bin"}}).has_value());
  EXPECT_FALSE(SlurmHosts({{"SLURM_JOB_NODELIST", ""}}).has_value());
}

TEST(SlurmHosts, PairsNodesWithTheirTasks) {
  auto hosts = SlurmHosts(
      {{"SLURM_JOB_NODELIST", "gpu[01-03],cpu1"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}});
  ASSERT_TRUE(hosts.has_value());
  EXPECT_EQ(*hosts, (std::vector<Host>{{"gpu01", 2}, {"gpu02", 2}, {"gpu03", 2}, {"cpu1", 1}}));
}

TEST(SlurmHosts, ExplainsBadVariables) {
  EXPECT_USAGE_ERROR(SlurmHosts({{"SLURM_JOB_NODELIST", "a[1-2]"}}), "SLURM_TASKS_PER_NODE is not");
  EXPECT_USAGE_ERROR(
      SlurmHosts({{"SLURM_JOB_NODELIST", "a[1-2"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}}),
      "unclosed '[' in 'a[1-2'");
  EXPECT_USAGE_ERROR(
      SlurmHosts({{"SLURM_JOB_NODELIST", "a[1-3]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}}),
      "lists 3 nodes but task counts for 2");
}

}  // namespace
}  // namespace horde::launcher
