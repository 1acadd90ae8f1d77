// MpiBarrier over real MPI processes, without torch: run under mpirun with 1, 2 and 4
// ranks. A barrier must not complete on any rank before every rank has entered it:
// rank 0 leaves a mark in a file only after a pause, right before its barrier, and
// every rank must find the mark once its barrier has completed (the ranks share a host,
// as under ctest).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "core/host_tensor.h"
#include "tests/mpi/collective_runner.h"

namespace horde {
namespace {

// A barrier's request and entry, as the framework adapters submit it: no data.
Status Barrier() {
  Request r;
  r.op = OpType::kBarrier;
  auto nothing = std::make_shared<HostTensor>(DataType::kUInt8, TensorShape{0});
  return testing::Submit(r, nothing, nothing)->Wait();
}

// A path every rank of this job agrees on: rank 0's process id, broadcast.
std::string SharedPath(const std::string& what) {
  auto pid = std::make_shared<HostTensor>(DataType::kInt64, TensorShape{1});
  pid->as<int64_t>()[0] = getpid();
  Request r;
  r.op = OpType::kBroadcast;
  r.name = "barrier.shared.path." + what;
  r.root = 0;
  const Status s = testing::Submit(r, pid, pid)->Wait();
  EXPECT_TRUE(s.ok()) << s.message();
  const char* tmp = getenv("TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/horde_barrier_" + what + "_" +
         std::to_string(pid->as<int64_t>()[0]);
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(CollectiveBarrier, NoRankLeavesBeforeEveryRankEntered) {
  const std::string mark = SharedPath("mark");
  for (int round = 0; round < 3; ++round) {
    const std::string path = mark + "." + std::to_string(round);
    if (testing::Rank() == 0) {
      // Late enough that a barrier that did not wait would be seen not to.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ofstream(path) << round;
    }
    ASSERT_TRUE(Barrier().ok());
    EXPECT_TRUE(Exists(path)) << "rank " << testing::Rank() << " left barrier " << round
                              << " before rank 0 entered it";
    // Nobody removes the mark before every rank has looked.
    ASSERT_TRUE(Barrier().ok());
    if (testing::Rank() == 0) std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace horde
