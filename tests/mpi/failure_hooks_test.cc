// MpiContext's failure hooks (mpi_context.h), what the GPU path aborts its NCCL
// communicators through before a failed runtime's threads are joined: RevokeAll (the
// job re-forming after a rank failure) runs every live context's hooks with the reason,
// a removed hook is not run, and a context that simply goes away (a normal shutdown)
// runs none. Over real MPI processes; without the fault-tolerant MPI RevokeAll revokes
// nothing, and the hooks run all the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

TEST(FailureHooksTest, RevokeAllRunsEveryContextsHooksWithTheReason) {
  std::shared_ptr<MpiContext> job, set;
  ASSERT_TRUE(MpiContext::Create(&job).ok());
  ASSERT_TRUE(MpiContext::CreateForRanks({0}, &set).ok());
  std::vector<std::string> heard;
  int owner_a = 0, owner_b = 0;
  job->AddFailureHook(&owner_a,
                      [&](const std::string& reason) { heard.push_back("a: " + reason); });
  if (set) {
    set->AddFailureHook(&owner_b,
                        [&](const std::string& reason) { heard.push_back("b: " + reason); });
  }
  MpiContext::RevokeAll();
  const std::string reason = "a rank failed and the job is re-forming from its live ranks";
  std::vector<std::string> expected = {"a: " + reason};
  if (set) expected.push_back("b: " + reason);
  std::sort(heard.begin(), heard.end());  // the contexts' order is not the point
  EXPECT_EQ(heard, expected) << "the hooks RevokeAll ran";

  heard.clear();
  job->RemoveFailureHook(&owner_a);
  MpiContext::RunFailureHooks("this process failed");
  EXPECT_EQ(heard,
            set ? std::vector<std::string>{"b: this process failed"} : std::vector<std::string>{})
      << "a removed hook ran, or a kept one did not";
  if (set) set->RemoveFailureHook(&owner_b);
}

TEST(FailureHooksTest, ANormalShutdownRunsNoHook) {
  int runs = 0;
  {
    std::shared_ptr<MpiContext> job;
    ASSERT_TRUE(MpiContext::Create(&job).ok());
    int owner = 0;
    job->AddFailureHook(&owner, [&](const std::string&) { ++runs; });
    job->RemoveFailureHook(&owner);
  }
  MpiContext::RunFailureHooks("this process failed");
  EXPECT_EQ(runs, 0) << "a hook ran without a failure, or after its context was gone";
}

}  // namespace
}  // namespace mpi
}  // namespace horde
