// The link matrix and its text form, which test beds outside C++ read and write too.
#include "topology/link_matrix.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace horde {
namespace {

const char kIslands[] =
    "# two islands\n"
    "latency_us 40   # per message\n"
    "\n"
    "nic 10 10 0 10\n"
    "-    2    0.25 0.25\n"
    "2    -    0.25 0.25  # rank 1\n"
    "0.25 0.25 -    2\n"
    "0.25 0.25 2    0\n";

std::string ErrorOf(const std::string& text) {
  LinkMatrix m;
  const Status status = LinkMatrix::Parse(text, &m);
  EXPECT_FALSE(status.ok()) << text;
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return status.message();
}

TEST(LinkMatrix, StartsWithNoLinksNoNicAndNoLatency) {
  const LinkMatrix m(3);
  EXPECT_EQ(m.size(), 3);
  for (int u = 0; u < 3; ++u) {
    EXPECT_EQ(m.Nic(u), 0);
    for (int v = 0; v < 3; ++v) EXPECT_EQ(m.Link(u, v), 0);
  }
  EXPECT_EQ(m.latency_seconds(), 0);
  EXPECT_EQ(LinkMatrix().size(), 0);
}

TEST(LinkMatrix, ParsesGbitPerSecondIntoBytesWithCommentsLatencyAndNic) {
  LinkMatrix m;
  ASSERT_TRUE(LinkMatrix::Parse(kIslands, &m).ok());
  ASSERT_EQ(m.size(), 4);
  EXPECT_DOUBLE_EQ(m.latency_seconds(), 40e-6);
  EXPECT_DOUBLE_EQ(m.Link(0, 1), 2e9 / 8);
  EXPECT_DOUBLE_EQ(m.Link(2, 0), 0.25e9 / 8);
  EXPECT_EQ(m.Link(3, 3), 0);
  EXPECT_DOUBLE_EQ(m.Nic(0), 10e9 / 8);
  EXPECT_EQ(m.Nic(2), 0);
}

TEST(LinkMatrix, LatencyAndNicAreOptionalAndNicMayComeAnywhere) {
  LinkMatrix m;
  ASSERT_TRUE(LinkMatrix::Parse("- 1\n1 -\nnic 3 4\n", &m).ok());
  EXPECT_EQ(m.latency_seconds(), 0);
  EXPECT_DOUBLE_EQ(m.Nic(1), 4e9 / 8);
  ASSERT_TRUE(LinkMatrix::Parse("-\n", &m).ok());
  EXPECT_EQ(m.size(), 1);
}

TEST(LinkMatrix, FormatParsesBackToTheSameMatrix) {
  LinkMatrix m(3);
  m.set_latency_seconds(12.5e-6);
  m.SetNic(1, 1234567890.123);
  m.SetLink(0, 1, 1.0 / 3 * 1e9);
  m.SetLink(1, 0, 7e10);
  m.SetLink(2, 1, 1);
  LinkMatrix back;
  ASSERT_TRUE(LinkMatrix::Parse(m.Format(), &back).ok()) << m.Format();
  ASSERT_EQ(back.size(), 3);
  EXPECT_NEAR(back.latency_seconds(), m.latency_seconds(), 1e-9 * m.latency_seconds());
  for (int u = 0; u < 3; ++u) {
    EXPECT_NEAR(back.Nic(u), m.Nic(u), 1e-9 * m.Nic(u));
    for (int v = 0; v < 3; ++v) EXPECT_NEAR(back.Link(u, v), m.Link(u, v), 1e-9 * m.Link(u, v));
  }
  // Once parsed, the text is a fixed point.
  EXPECT_EQ(back.Format(), m.Format());

  ASSERT_TRUE(LinkMatrix::Parse(kIslands, &m).ok());
  EXPECT_EQ(m.Format(),
            "# horde link matrix: 4 ranks; Gbit/s from each row's rank to each column's, 0: no "
            "link\n"
            "latency_us 40\n"
            "# the most each rank sends (and receives) over all its links at once\n"
            "nic 10 10 0 10\n"
            "- 2 0.25 0.25\n"
            "2 - 0.25 0.25\n"
            "0.25 0.25 - 2\n"
            "0.25 0.25 2 -\n");
}

TEST(LinkMatrix, ErrorsNameTheLineAndWhatWasExpected) {
  EXPECT_EQ(ErrorOf("- 1\n1 -\n1 1 -\n"),
            "link matrix line 1: expected 3 values (one per rank), found 2");
  EXPECT_EQ(ErrorOf("- 1 1\n1 - 1\n1 1\n"),
            "link matrix line 3: expected 3 values (one per rank), found 2");
  EXPECT_EQ(ErrorOf("- 1\nabc -\n"), "link matrix line 2: 'abc' is not a number of Gbit/s");
  EXPECT_EQ(ErrorOf("- 1x\n1 -\n"), "link matrix line 1: '1x' is not a number of Gbit/s");
  EXPECT_EQ(ErrorOf("- nan\n1 -\n"), "link matrix line 1: 'nan' is not a number of Gbit/s");
  EXPECT_EQ(ErrorOf("- inf\n1 -\n"), "link matrix line 1: 'inf' is not a number of Gbit/s");
  EXPECT_EQ(ErrorOf("- 1\n-2 -\n"), "link matrix line 2: -2 is negative; expected Gbit/s >= 0");
  EXPECT_EQ(ErrorOf("- -\n1 -\n"),
            "link matrix line 1: '-' off the diagonal (column 1); expected a number of Gbit/s, "
            "0 for no link");
  EXPECT_EQ(ErrorOf("- 1\n1 5\n"),
            "link matrix line 2: '5' on the diagonal (rank 1 to itself); expected '-' or 0");
  EXPECT_EQ(ErrorOf("nic 1 2 3\n- 1\n1 -\n"),
            "link matrix line 1: nic has 3 values; expected 2 (one per rank, as many as the "
            "rows)");
  EXPECT_EQ(ErrorOf("- 1\n1 -\nnic 1 x\n"), "link matrix line 3: 'x' is not a number of Gbit/s");
  EXPECT_EQ(ErrorOf("nic 1 1\nnic 1 1\n- 1\n1 -\n"),
            "link matrix line 2: a second 'nic' line (the first is line 1); expected one");
  EXPECT_EQ(ErrorOf("latency_us 1 2\n- 1\n1 -\n"),
            "link matrix line 1: latency_us has 2 values; expected one number of microseconds");
  EXPECT_EQ(ErrorOf("latency_us -3\n- 1\n1 -\n"),
            "link matrix line 1: -3 is negative; expected microseconds >= 0");
  const std::string empty =
      "link matrix: no rows; expected one row of Gbit/s per rank (and at least one rank)";
  EXPECT_EQ(ErrorOf(""), empty);
  EXPECT_EQ(ErrorOf("# nothing\n\nlatency_us 3\n"), empty);
}

TEST(LinkMatrix, AFailedParseLeavesTheOutputAlone) {
  LinkMatrix m(2);
  EXPECT_FALSE(LinkMatrix::Parse("- x\n1 -\n", &m).ok());
  EXPECT_EQ(m.size(), 2);
}

TEST(LinkMatrix, RestrictedRenumbersAProcessSetsRanksInItsOrder) {
  LinkMatrix m;
  ASSERT_TRUE(LinkMatrix::Parse(kIslands, &m).ok());
  const LinkMatrix set = m.Restricted({3, 0, 2});
  ASSERT_EQ(set.size(), 3);
  EXPECT_EQ(set.latency_seconds(), m.latency_seconds());
  EXPECT_EQ(set.Link(0, 2), m.Link(3, 2));  // 2 Gbit/s: same island
  EXPECT_EQ(set.Link(1, 0), m.Link(0, 3));
  EXPECT_EQ(set.Link(1, 1), 0);
  EXPECT_EQ(set.Nic(0), m.Nic(3));
  EXPECT_EQ(set.Nic(2), 0);
}

TEST(LinkMatrix, AHostsLineNamesTheRowsAndSurvivesFormatAndRestricted) {
  LinkMatrix m;
  ASSERT_TRUE(LinkMatrix::Parse("hosts a b c  # by name\n- 1 2\n1 - 3\n2 3 -\n", &m).ok());
  EXPECT_EQ(m.hosts(), (std::vector<std::string>{"a", "b", "c"}));
  LinkMatrix back;
  ASSERT_TRUE(LinkMatrix::Parse(m.Format(), &back).ok()) << m.Format();
  EXPECT_EQ(back.hosts(), m.hosts());
  EXPECT_EQ(m.Restricted({2, 0}).hosts(), (std::vector<std::string>{"c", "a"}));
  ASSERT_TRUE(LinkMatrix::Parse("- 1\n1 -\n", &m).ok());
  EXPECT_TRUE(m.hosts().empty());
  EXPECT_EQ(m.Format().find("hosts"), std::string::npos);
}

TEST(LinkMatrix, AHostsLineNeedsOneDistinctNamePerRow) {
  EXPECT_EQ(ErrorOf("hosts a\n- 1\n1 -\n"),
            "link matrix line 1: hosts has 1 names; expected 2 (one per row, as many as the rows)");
  EXPECT_EQ(ErrorOf("- 1\n1 -\nhosts a a\n"),
            "link matrix line 3: host 'a' is named twice (rows 0 and 1); expected one row per "
            "host");
  EXPECT_EQ(ErrorOf("hosts a b\nhosts a b\n- 1\n1 -\n"),
            "link matrix line 2: a second 'hosts' line (the first is line 1); expected one");
}

TEST(LinkMatrix, RacksAndUplinksSurviveFormatAndRestricted) {
  LinkMatrix m;
  ASSERT_TRUE(LinkMatrix::Parse("racks 0 1 0\nuplink 0.5 2\n- 1 1\n1 - 1\n1 1 -\n", &m).ok());
  ASSERT_EQ(m.racks(), 2);
  EXPECT_EQ(m.Rack(0), 0);
  EXPECT_EQ(m.Rack(1), 1);
  EXPECT_EQ(m.Rack(2), 0);
  EXPECT_DOUBLE_EQ(m.Uplink(0), GbitToBytes(0.5));
  EXPECT_DOUBLE_EQ(m.Uplink(1), GbitToBytes(2));
  LinkMatrix back;
  ASSERT_TRUE(LinkMatrix::Parse(m.Format(), &back).ok()) << m.Format();
  EXPECT_EQ(back.racks(), 2);
  EXPECT_EQ(back.Rack(1), 1);
  EXPECT_DOUBLE_EQ(back.Uplink(0), m.Uplink(0));
  const LinkMatrix set = m.Restricted({1, 2});
  EXPECT_EQ(set.racks(), 2);
  EXPECT_EQ(set.Rack(0), 1);
  EXPECT_EQ(set.Rack(1), 0);
  ASSERT_TRUE(LinkMatrix::Parse("- 1\n1 -\n", &m).ok());
  EXPECT_EQ(m.racks(), 0);
  EXPECT_EQ(m.Rack(1), 0);
  EXPECT_EQ(m.Format().find("racks"), std::string::npos);
}

TEST(LinkMatrix, RacksNeedUplinksAndOneRackNumberPerRow) {
  EXPECT_EQ(ErrorOf("racks 0 1\n- 1\n1 -\n"),
            "link matrix line 1: racks without an 'uplink' line; expected both or neither");
  EXPECT_EQ(ErrorOf("uplink 1\n- 1\n1 -\n"),
            "link matrix line 1: uplink without a 'racks' line; expected both or neither");
  EXPECT_EQ(ErrorOf("racks 0\nuplink 1\n- 1\n1 -\n"),
            "link matrix line 1: racks has 1 values; expected 2 (one rack number per row)");
  EXPECT_EQ(ErrorOf("racks 0 x\nuplink 1\n- 1\n1 -\n"),
            "link matrix line 1: 'x' is not a rack number; expected 0 to 1");
  EXPECT_EQ(ErrorOf("racks 0 1\nuplink 1\n- 1\n1 -\n"),
            "link matrix line 2: uplink has 1 values; expected 2 (one per rack, racks 0 to 1)");
  EXPECT_EQ(ErrorOf("racks 0 1\nuplink 1 0\n- 1\n1 -\n"),
            "link matrix line 2: an uplink of 0; expected Gbit/s above 0");
}

}  // namespace
}  // namespace horde
