#include "launcher/env_forwarding.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace horde::launcher {
namespace {

TEST(EnvForwarding, ForwardsTheBasicsThenPrefixedVariablesByName) {
  Environment env = {{"HOME", "/root"},           {"PATH", "/bin"},         {"NCCL_DEBUG", "INFO"},
                     {"HOROVOD_CYCLE_TIME", "2"}, {"OMP_NUM_THREADS", "4"}, {"VIRTUAL_ENV", "/v"},
                     {"HORDE_LOG_LEVEL", "info"}, {"PYTHONPATH", "/p"},     {"OMPI_MCA_x", "1"},
                     {"LD_LIBRARY_PATH", "/l"},   {"SLURM_JOB_ID", "7"},    {"MY_HORDE_X", "no"}};
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

TEST(EnvForwarding, RefusesNamesAndValuesThatCouldReadAsMoreThanOneVariable) {
  EXPECT_USAGE_ERROR(ForwardedVariables({{"HORDE_X", "1\nLD_PRELOAD=/tmp/evil.so"}}, {}),
                     "cannot forward HORDE_X to the ranks: its value holds a line break");
  EXPECT_USAGE_ERROR(ForwardedVariables({{"NCCL_A,LD_PRELOAD", "1"}}, {}),
                     "cannot forward the environment variable 'NCCL_A,LD_PRELOAD'");
  EXPECT_USAGE_ERROR(ForwardedVariables({{"PATH", "/bin\r"}}, {}), "line break");
  // What horderun sets itself is not forwarded, so it is not checked either.
  EXPECT_TRUE(ForwardedVariables({{"HORDE_X", "a\nb"}}, {{"HORDE_X", "1"}}).empty());
}

}  // namespace
}  // namespace horde::launcher
