#include "launcher/env_forwarding.h"

#include <gtest/gtest.h>

namespace horde::launcher {
namespace {

TEST(EnvForwarding, ForwardsTheBasicsThenPrefixedVariablesByName) {
  Environment env = {{"HOME", "/root"},          {"PATH", "/bin"},
                     {"NCCL_DEBUG", "INFO"},     {"HOROVOD_CYCLE_TIME", "2"},
                     {"OMP_NUM_THREADS", "4"},   {"VIRTUAL_ENV", "/v"},
                     {"HORDE_LOG_LEVEL", "info"}, {"PYTHONPATH", "/p"},
                     {"OMPI_MCA_x", "1"},        {"LD_LIBRARY_PATH", "/l"},
                     {"SLURM_JOB_ID", "7"},      {"MY_HORDE_X", "no"}};
  EXPECT_EQ(ForwardedVariables(env, {}),
            (std::vector<std::string>{"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
                                      "HORDE_LOG_LEVEL", "HOROVOD_CYCLE_TIME", "NCCL_DEBUG",
                                      "OMP_NUM_THREADS"}));
}

TEST(EnvForwarding, LeavesOutWhatHorderunSets) {
  Environment env = {{"PATH", "/bin"}, {"HORDE_CYCLE_TIME", "2"}, {"NCCL_SOCKET_IFNAME", "a"}};
  EXPECT_EQ(ForwardedVariables(env, {{"HORDE_CYCLE_TIME", "5"}, {"NCCL_SOCKET_IFNAME", "b"}}),
            std::vector<std::string>{"PATH"});
}

TEST(EnvForwarding, OnlyVariablesThatAreSet) {
  EXPECT_TRUE(ForwardedVariables({{"HOME", "/"}}, {}).empty());
}

}  // namespace
}  // namespace horde::launcher
