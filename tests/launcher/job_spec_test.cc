#include "launcher/job_spec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "test_util.h"
#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

const LocalMachine kLaptop = {4, false, "laptop", {"192.168.1.5"}, "/home/me/work"};

JobSpec Make(const std::vector<std::string>& args, const Environment& env = {}) {
  return MakeJobSpec(ParseOptions(args), env, kLaptop);
}

TEST(JobSpec, LocalRunHasOneSlotPerCore) {
  JobSpec job = Make({"-np", "2", "python3"});
  EXPECT_EQ(job.num_proc, 2);
  EXPECT_EQ(job.hosts, (std::vector<Host>{{"localhost", 4}}));
  EXPECT_EQ(job.host_source, HostSource::kLocal);
  EXPECT_FALSE(job.oversubscribe);
  EXPECT_TRUE(job.ssh_hosts.empty());
}

TEST(JobSpec, LocalRunOversubscribesOnlyAboveTheCores) {
  EXPECT_FALSE(Make({"-np", "4", "x"}).oversubscribe);
  EXPECT_TRUE(Make({"-np", "5", "x"}).oversubscribe);
  // Explicit hosts are a promise about slots: no oversubscription, an error instead.
  EXPECT_USAGE_ERROR(Make({"-np", "5", "-H", "localhost:4", "x"}),
                     "-np 5 asks for more processes than the 4 slots of -H localhost:4");
}

TEST(JobSpec, LocalRunNeedsNp) { EXPECT_USAGE_ERROR(Make({"python3"}), "-np is missing"); }

TEST(JobSpec, HostsDefaultNpToTheirSlots) {
  JobSpec job = Make({"-H", "a:2,b:3", "x"});
  EXPECT_EQ(job.num_proc, 5);
  EXPECT_EQ(job.host_source, HostSource::kFlag);
  EXPECT_EQ(job.ssh_hosts, (std::vector<std::string>{"a", "b"}));
}

TEST(JobSpec, LocalHostsNeedNoSsh) {
  JobSpec job = Make({"-H", "laptop:2,localhost:1,192.168.1.5:1,gpu1:2", "x"});
  EXPECT_EQ(job.ssh_hosts, std::vector<std::string>{"gpu1"});
}

TEST(JobSpec, NpAboveTheSlotsIsAnError) {
  EXPECT_USAGE_ERROR(Make({"-np", "5", "-H", "a:2,b:2", "x"}),
                     "-np 5 asks for more processes than the 4 slots of -H a:2,b:2: lower -np");
}

TEST(JobSpec, HostfileGivesHosts) {
  const test::TempDir dir;
  std::string path = dir.File("hosts");
  std::ofstream(path) << "# two nodes\nn1 slots=2\nn2 slots=2\n";
  JobSpec job = Make({"--hostfile", path, "x"});
  EXPECT_EQ(job.hosts, (std::vector<Host>{{"n1", 2}, {"n2", 2}}));
  EXPECT_EQ(job.host_source, HostSource::kHostfile);
  EXPECT_EQ(job.num_proc, 4);
  EXPECT_USAGE_ERROR(Make({"-np", "6", "--hostfile", path, "x"}),
                     "than the 4 slots of --hostfile " + path + " (n1:2,n2:2)");
  std::remove(path.c_str());
  EXPECT_USAGE_ERROR(Make({"--hostfile", path, "x"}), "cannot read");
}

TEST(JobSpec, SlurmAllocationGivesHostsWithoutSsh) {
  Environment slurm = {{"SLURM_JOB_NODELIST", "node[01-02]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  JobSpec job = Make({"python3"}, slurm);
  EXPECT_EQ(job.hosts, (std::vector<Host>{{"node01", 2}, {"node02", 2}}));
  EXPECT_EQ(job.num_proc, 4);
  EXPECT_EQ(job.host_source, HostSource::kSlurm);
  EXPECT_TRUE(job.ssh_hosts.empty());  // mpirun starts its daemons with srun there
  EXPECT_USAGE_ERROR(Make({"-np", "8", "x"}, slurm), "the 4 slots of the Slurm allocation");
  // -H wins over the allocation.
  EXPECT_EQ(Make({"-H", "node01:1", "x"}, slurm).hosts, (std::vector<Host>{{"node01", 1}}));
}

TEST(JobSpec, EnvironmentAndInterface) {
  JobSpec job = Make({"-np", "1", "--log-level", "info", "--network-interface", "eth1", "x"},
                     {{"PATH", "/bin"}, {"HORDE_LOG_LEVEL", "debug"}, {"NCCL_DEBUG", "WARN"}});
  EXPECT_EQ(job.network_interface, "eth1");
  EXPECT_EQ(job.set_env,
            (std::vector<EnvVar>{{"HORDE_LOG_LEVEL", "info"}, {"NCCL_SOCKET_IFNAME", "eth1"}}));
  EXPECT_EQ(job.forwarded_env, (std::vector<std::string>{"PATH", "NCCL_DEBUG"}));
}

// torchrun's rule: OMP_NUM_THREADS=1 when unset and a host runs more than one rank.
TEST(JobSpec, OmpNumThreadsIsOneWhenUnsetAndAHostRunsSeveralRanks) {
  JobSpec job = Make({"-np", "3", "--log-level", "info", "x"});
  EXPECT_TRUE(job.omp_threads_defaulted);
  EXPECT_EQ(job.set_env,
            (std::vector<EnvVar>{{"OMP_NUM_THREADS", "1"}, {"HORDE_LOG_LEVEL", "info"}}));
  EXPECT_EQ(OmpThreadsNotice(job),
            "OMP_NUM_THREADS is not set: every rank gets OMP_NUM_THREADS=1 (as with torchrun), "
            "so that 3 ranks on one host do not each start a thread per core; set it to tune");
  EXPECT_TRUE(Make({"-np", "3", "-H", "a:1,b:2", "x"}).omp_threads_defaulted);
  for (const JobSpec& untouched :
       {Make({"-np", "2", "x"}, {{"OMP_NUM_THREADS", "4"}}), Make({"-np", "1", "x"}),
        Make({"-np", "2", "-H", "a:1,b:1", "x"}), Make({"-np", "2", "-H", "a:1,b:2", "x"})}) {
    EXPECT_FALSE(untouched.omp_threads_defaulted);
    for (const EnvVar& var : untouched.set_env) EXPECT_NE(var.name, "OMP_NUM_THREADS");
  }
}

TEST(JobSpec, PathsBecomeAbsolute) {
  const test::TempDir dir;
  std::string key = dir.File("key");
  std::ofstream(key) << "key\n";
  JobSpec job = Make({"-np", "1", "-i", key, "--output-filename", "logs", "-p", "2222", "x"});
  EXPECT_EQ(job.output_dir, "/home/me/work/logs");
  EXPECT_EQ(job.ssh.identity_file, key);
  EXPECT_EQ(job.ssh.port, 2222);
  std::remove(key.c_str());
  EXPECT_USAGE_ERROR(Make({"-np", "1", "-i", key, "x"}),
                     "--ssh-identity-file: cannot read '" + key + "'");
}

TEST(JobSpec, RootIsNoted) {
  LocalMachine root = kLaptop;
  root.is_root = true;
  EXPECT_TRUE(MakeJobSpec(ParseOptions({"-np", "1", "x"}), {}, root).run_as_root);
  EXPECT_FALSE(Make({"-np", "1", "x"}).run_as_root);
}

}  // namespace
}  // namespace horde::launcher
