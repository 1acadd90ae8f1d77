// Racks told apart from a probe's pair rates, and recorded only where an uplink binds.
#include "topology/rack_finder.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/link_graphs.h"

namespace horde {
namespace {

// Pairs as a probe measures them behind 1 Gbit/s NICs: within a rack at about 0.95,
// across racks at what their uplink's sharing left (0.25 to 0.45).
LinkMatrix MeasuredRacks(const std::vector<int>& rack) {
  const int n = static_cast<int>(rack.size());
  LinkMatrix m(n);
  for (int u = 0; u < n; ++u) {
    for (int v = 0; v < n; ++v) {
      if (u == v) continue;
      const double noise = 0.01 * ((u * 7 + v * 3) % 5);
      m.SetLink(u, v, GbitToBytes(rack[u] == rack[v] ? 0.93 + noise : 0.25 + 4 * noise));
    }
  }
  return m;
}

TEST(RackFinder, GroupsHostsWhoseLinksRunAtTheFastestRate) {
  EXPECT_EQ(FindRacks(MeasuredRacks({0, 0, 1, 1})), (std::vector<int>{0, 0, 1, 1}));
  // Crossed rank order: racks are numbered by their lowest rank.
  EXPECT_EQ(FindRacks(MeasuredRacks({0, 1, 0, 1})), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(FindRacks(MeasuredRacks({1, 0, 2, 1, 0})), (std::vector<int>{0, 1, 2, 0, 1}));
}

TEST(RackFinder, OnePairReadingHighDoesNotSplitTheOtherRack) {
  // On a busy host one pair can read far above its NIC (the probe's timing): the other
  // rack's pairs still stand clear of the links between racks.
  LinkMatrix links = MeasuredRacks({0, 1, 0, 1});
  links.SetLink(1, 3, GbitToBytes(1.6));
  links.SetLink(3, 1, GbitToBytes(1.6));
  EXPECT_EQ(FindRacks(links), (std::vector<int>{0, 1, 0, 1}));
  // And one slow pair on a switch is no rack: its hosts reach the others fast.
  LinkMatrix one_switch = MeasuredRacks({0, 0, 0, 0});
  one_switch.SetLink(0, 1, GbitToBytes(0.3));
  EXPECT_TRUE(FindRacks(one_switch).empty());
}

TEST(RackFinder, PairsBetweenRacksThatWonTheirUplinkDoNotJoinTheRacks) {
  // Two pairs between the racks share the uplink in each probe round; TCP shares it
  // unfairly, so one pair per round reads 0.43 Gbit/s both ways and the other 0.13. The
  // widest gap (0.43 to 0.13) would join everything through the two winners.
  LinkMatrix links = MeasuredRacks({0, 1, 0, 1});
  auto set_pair = [&](int u, int v, double gbit) {
    links.SetLink(u, v, GbitToBytes(gbit));
    links.SetLink(v, u, GbitToBytes(gbit));
  };
  set_pair(0, 1, 0.43);
  set_pair(2, 3, 0.13);
  set_pair(0, 3, 0.43);
  set_pair(1, 2, 0.13);
  EXPECT_EQ(FindRacks(links), (std::vector<int>{0, 1, 0, 1}));
}

TEST(RackFinder, OneSwitchOrNoLinksIsNoRacks) {
  EXPECT_TRUE(FindRacks(Complete(4, 1, 1)).empty());
  EXPECT_TRUE(FindRacks(MeasuredRacks({0, 0, 0, 0})).empty());
  EXPECT_TRUE(FindRacks(LinkMatrix(3)).empty());
}

TEST(RackFinder, RecordsRacksWhoseUplinkBindsAndKeepsTheMeasuredLinks) {
  LinkMatrix links = MeasuredRacks({0, 1, 0, 1});
  ASSERT_TRUE(RecordRacks({0, 1, 0, 1}, {GbitToBytes(0.5), GbitToBytes(0.5)}, &links));
  ASSERT_EQ(links.racks(), 2);
  EXPECT_EQ(links.Rack(2), 0);
  EXPECT_DOUBLE_EQ(links.Uplink(1), GbitToBytes(0.5));
  EXPECT_DOUBLE_EQ(links.Link(0, 1), MeasuredRacks({0, 1, 0, 1}).Link(0, 1));
  EXPECT_DOUBLE_EQ(links.Link(0, 2), MeasuredRacks({0, 1, 0, 1}).Link(0, 2));
  // An uplink that read below the fastest flow measured across it carries that flow.
  LinkMatrix low = MeasuredRacks({0, 0, 1, 1});
  ASSERT_TRUE(RecordRacks({0, 0, 1, 1}, {GbitToBytes(0.1), GbitToBytes(0.5)}, &low));
  EXPECT_DOUBLE_EQ(low.Uplink(0), MeasuredRacks({0, 0, 1, 1}).Link(0, 3));  // the fastest
  EXPECT_DOUBLE_EQ(low.Uplink(1), GbitToBytes(0.5));
}

TEST(RackFinder, IslandsOfDirectLinksAreNotRacks) {
  // Two islands joined by four independent 0.25 Gbit/s wires: all together carry what
  // their sum allows, so no uplink binds and the matrix stays as measured.
  LinkMatrix links = Islands({0, 0, 1, 1}, 2, 0.25);
  const std::vector<int> rack = FindRacks(links);
  EXPECT_EQ(rack, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_FALSE(RecordRacks(rack, {GbitToBytes(0.95), GbitToBytes(0.97)}, &links));
  EXPECT_EQ(links.racks(), 0);
  EXPECT_DOUBLE_EQ(links.Link(0, 2), GbitToBytes(0.25));
  EXPECT_FALSE(RecordRacks({}, {}, &links));
}

}  // namespace
}  // namespace horde
