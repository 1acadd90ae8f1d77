// The link matrix file every rank reads from its own host (topology/shared_link_file.h) and
// its mapping onto the job by host name (topology/link_matrix_hosts.h): one row per rank, or
// per host with several ranks a host; copies that differ, files of other hosts and
// placements the plan cannot serve fail on every rank alike.
#include "topology/shared_link_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/cpp/fake_transport.h"
#include "tests/temp_dir.h"
#include "topology/link_matrix_hosts.h"

namespace horde {
namespace {

// Rows for hosts a, b, c: a-b 1, a-c 2, b-c 3 Gbit/s.
const char kNamed[] = "hosts a b c\n- 1 2\n1 - 3\n2 3 -\n";

std::string Write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.File(name)) << text;
  return dir.File(name);
}

struct Read {
  std::vector<Status> status;
  std::vector<LinkMatrix> links;
};

// Rank r reads paths[r] on host hosts[r].
Read ReadOnRanks(const std::vector<std::string>& paths, const std::vector<std::string>& hosts) {
  const int size = static_cast<int>(paths.size());
  auto hub = std::make_shared<testing::FakeHub>(size);
  Read read{std::vector<Status>(size), std::vector<LinkMatrix>(size)};
  testing::RunOnRanks(size, [&](int rank) {
    testing::FakeTransport transport(hub, rank);
    read.status[rank] = ReadSharedLinkFile(&transport, paths[rank], hosts[rank], &read.links[rank]);
  });
  return read;
}

void ExpectSameErrorEverywhere(const Read& read, const std::string& message) {
  for (size_t r = 0; r < read.status.size(); ++r) {
    EXPECT_FALSE(read.status[r].ok()) << "rank " << r;
    EXPECT_EQ(read.status[r].message(), message) << "rank " << r;
  }
}

TEST(SharedLinkFile, RanksTakeTheRowsOfTheirHostsInAnyOrder) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  const Read read = ReadOnRanks({path, path}, {"c", "a"});
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(read.status[r].ok()) << read.status[r].message();
    const LinkMatrix& links = read.links[r];
    ASSERT_EQ(links.size(), 2);
    EXPECT_DOUBLE_EQ(links.Link(0, 1), 2e9 / 8);  // c to a
    EXPECT_EQ(links.hosts(), (std::vector<std::string>{"c", "a"}));
  }
}

TEST(SharedLinkFile, UnnamedRowsAreRanksInOrder) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", "- 1\n1 -\n");
  // Ranks sharing a host keep a row each: how trees are tried on one machine.
  const Read read = ReadOnRanks({path, path}, {"x", "x"});
  ASSERT_TRUE(read.status[1].ok()) << read.status[1].message();
  EXPECT_DOUBLE_EQ(read.links[1].Link(1, 0), 1e9 / 8);
  const std::string three = Write(dir, "three.txt", "- 1 1\n1 - 1\n1 1 -\n");
  ExpectSameErrorEverywhere(ReadOnRanks({three, three}, {"x", "y"}),
                            "HORDE_TOPOLOGY: '" + three +
                                "' has links for 3 ranks; this job has 2 (rows are ranks in "
                                "order unless a 'hosts' line names them)");
}

TEST(SharedLinkFile, AStaleCopyOnOneHostFailsEveryRank) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  const std::string stale = Write(dir, "stale.txt", "hosts a b c\n- 1 2\n1 - 9\n2 9 -\n");
  ExpectSameErrorEverywhere(
      ReadOnRanks({path, stale, path}, {"a", "b", "c"}),
      "HORDE_TOPOLOGY: the copies of the link matrix file '" + path +
          "' differ between hosts: "
          "rank 1 (on b) read another matrix than rank 0 (on a); every host needs the same file "
          "(horderun --probe-topology writes one)");
}

TEST(SharedLinkFile, AFileOfOtherHostsFailsEveryRank) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  ExpectSameErrorEverywhere(
      ReadOnRanks({path, path}, {"a", "d"}),
      "HORDE_TOPOLOGY: '" + path +
          "' names the hosts a, b, c; rank 1 runs on 'd', which it does "
          "not name (a matrix of other hosts: probe this job's with horderun --probe-topology)");
}

TEST(SharedLinkFile, SeveralRanksAHostTakeOneRowPerHostInTheOrderOfTheirFirstRanks) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  // Ranks placed by slot (c c a a) and round-robin (c a c a) list the hosts alike.
  for (const auto& hosts : {std::vector<std::string>{"c", "c", "a", "a"},
                            std::vector<std::string>{"c", "a", "c", "a"}}) {
    const Read read = ReadOnRanks(std::vector<std::string>(4, path), hosts);
    for (int r = 0; r < 4; ++r) {
      ASSERT_TRUE(read.status[r].ok()) << read.status[r].message();
      ASSERT_EQ(read.links[r].size(), 2);
      EXPECT_DOUBLE_EQ(read.links[r].Link(0, 1), 2e9 / 8);  // c to a
      EXPECT_EQ(read.links[r].hosts(), (std::vector<std::string>{"c", "a"}));
    }
  }
  const std::string unnamed = Write(dir, "unnamed.txt", "- 1\n1 -\n");
  const Read read = ReadOnRanks(std::vector<std::string>(4, unnamed), {"x", "x", "y", "y"});
  ASSERT_TRUE(read.status[3].ok()) << read.status[3].message();
  EXPECT_EQ(read.links[3].size(), 2);
  ExpectSameErrorEverywhere(
      ReadOnRanks(std::vector<std::string>(4, path), {"x", "x", "y", "y"}),
      "HORDE_TOPOLOGY: '" + path +
          "' names the hosts a, b, c; rank 0 runs on 'x', which it does "
          "not name (a matrix of other hosts: probe this job's with horderun --probe-topology)");
  const std::string three = Write(dir, "three.txt", "- 1 1\n1 - 1\n1 1 -\n");
  ExpectSameErrorEverywhere(ReadOnRanks(std::vector<std::string>(4, three), {"x", "x", "y", "y"}),
                            "HORDE_TOPOLOGY: '" + three +
                                "' has links for 3 ranks; this job has 4 ranks on 2 hosts (rows "
                                "are ranks in order, or hosts in the order of their first "
                                "ranks, unless a 'hosts' line names them)");
}

TEST(SharedLinkFile, HostsWithUnevenRanksOrCrossedPlacementFailEveryRank) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  ExpectSameErrorEverywhere(
      ReadOnRanks(std::vector<std::string>(3, path), {"b", "b", "a"}),
      "HORDE_TOPOLOGY: '" + path +
          "' plans trees between hosts that run as many ranks each; this job runs 2 on 'b' and "
          "1 on 'a' (HORDE_TOPOLOGY=off keeps collectives on MPI)");
  ExpectSameErrorEverywhere(
      ReadOnRanks(std::vector<std::string>(4, path), {"a", "b", "b", "a"}),
      "HORDE_TOPOLOGY: '" + path +
          "' needs the hosts' k-th ranks in the order of their first ranks; rank 2 on 'b' comes "
          "before rank 3 on 'a' (place ranks by host or by slot, or set HORDE_TOPOLOGY=off)");
}

TEST(SharedLinkFile, AFileMissingOnOneHostFailsEveryRank) {
  test::TempDir dir;
  const std::string path = Write(dir, "links.txt", kNamed);
  const Read read = ReadOnRanks({path, dir.File("missing.txt")}, {"a", "b"});
  EXPECT_FALSE(read.status[0].ok());
  EXPECT_NE(read.status[0].message().find("rank 1"), std::string::npos) << read.status[0].message();
  EXPECT_NE(read.status[1].message().find("cannot read the link matrix file"), std::string::npos);
}

}  // namespace
}  // namespace horde
