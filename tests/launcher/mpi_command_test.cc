// Golden commands: what horderun runs for a given command line, per MPI flavour.
#include "launcher/mpi_command.h"

#include <gtest/gtest.h>

#include <fstream>

#include "launcher/shell_words.h"
#include "test_util.h"
#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

const LocalMachine kRootOnHostA = {2, true, "hostA", {"10.211.0.1"}, "/work"};
const Environment kEnv = {{"PATH", "/usr/bin"}, {"HOME", "/root"}, {"HORDE_LOG_LEVEL", "debug"}};

class MpiCommandTest : public testing::Test {
 protected:
  void SetUp() override { std::ofstream(key_) << "key\n"; }

  std::string Build(MpiFlavor flavor, const std::vector<std::string>& args,
                    const LocalMachine& machine = kRootOnHostA) {
    return FormatCommand(BuildMpiCommand(flavor, MakeJobSpec(ParseOptions(args), kEnv, machine)));
  }

  std::vector<std::string> TwoHosts() {
    return {"-np",
            "4",
            "-H",
            "hostA:2,hostB:2",
            "-p",
            "2222",
            "-i",
            key_,
            "--network-interface",
            "hnet0",
            "--cycle-time-ms",
            "5",
            "--mpi-args",
            "--mca btl tcp,self",
            "python3",
            "train.py",
            "--lr",
            "0.1"};
  }

  const test::TempDir dir_;
  const std::string key_ = dir_.File("key");
};

TEST_F(MpiCommandTest, OpenMpiLocalTagged) {
  EXPECT_EQ(Build(MpiFlavor::kOpenMpi, {"-np", "2", "--tag-output", "python3", "-c", "print(1)"}),
            "mpirun --allow-run-as-root -np 2 -H localhost:2 --map-by slot --bind-to none "
            "--tag-output -x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 python3 -c 'print(1)'");
}

TEST_F(MpiCommandTest, OpenMpiLocalOversubscribedNotRoot) {
  LocalMachine user = kRootOnHostA;
  user.is_root = false;
  EXPECT_EQ(Build(MpiFlavor::kOpenMpi, {"-np", "3", "--output-filename", "logs", "x"}, user),
            "mpirun -np 3 -H localhost:2 --map-by slot --bind-to none --oversubscribe "
            "--output-filename /work/logs -x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 x");
}

TEST_F(MpiCommandTest, OpenMpiTwoHosts) {
  EXPECT_EQ(Build(MpiFlavor::kOpenMpi, TwoHosts()),
            "mpirun --allow-run-as-root -np 4 -H hostA:2,hostB:2 --map-by slot --bind-to none "
            "--mca plm_rsh_args '-p 2222 -i " +
                key_ +
                "' "
                "--mca btl_tcp_if_include hnet0 --mca oob_tcp_if_include hnet0 "
                "-x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 -x HORDE_CYCLE_TIME=5 "
                "-x NCCL_SOCKET_IFNAME=hnet0 "
                "--mca btl tcp,self python3 train.py --lr 0.1");
}

TEST_F(MpiCommandTest, OpenMpiNoSshOptionsWithoutRemoteHosts) {
  EXPECT_EQ(Build(MpiFlavor::kOpenMpi, {"-H", "hostA:2", "-p", "2222", "x"}),
            "mpirun --allow-run-as-root -np 2 -H hostA:2 --map-by slot --bind-to none "
            "-x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 x");
}

// Open MPI 5 (PRRTE): the same job in the options 5.0 does not deprecate.
TEST_F(MpiCommandTest, OpenMpiPrrteLocalTagged) {
  EXPECT_EQ(
      Build(MpiFlavor::kOpenMpiPrrte, {"-np", "2", "--tag-output", "python3", "-c", "print(1)"}),
      "mpirun --allow-run-as-root -np 2 -H localhost:2 --map-by slot --bind-to none "
      "--output tag -x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 python3 -c 'print(1)'");
}

TEST_F(MpiCommandTest, OpenMpiPrrteLocalOversubscribedNotRoot) {
  LocalMachine user = kRootOnHostA;
  user.is_root = false;
  EXPECT_EQ(Build(MpiFlavor::kOpenMpiPrrte, {"-np", "3", "--output-filename", "logs", "x"}, user),
            "mpirun -np 3 -H localhost:2 --map-by slot:OVERSUBSCRIBE --bind-to none "
            "--output dir=/work/logs,merge-stderr-to-stdout -x PATH -x HORDE_LOG_LEVEL "
            "-x OMP_NUM_THREADS=1 x");
}

TEST_F(MpiCommandTest, OpenMpiPrrteTwoHosts) {
  EXPECT_EQ(Build(MpiFlavor::kOpenMpiPrrte, TwoHosts()),
            "mpirun --allow-run-as-root -np 4 -H hostA:2,hostB:2 --map-by slot --bind-to none "
            "--prtemca plm_ssh_args '-p 2222 -i " +
                key_ +
                "' "
                "--mca btl_tcp_if_include hnet0 --prtemca oob_tcp_if_include hnet0 "
                "-x PATH -x HORDE_LOG_LEVEL -x OMP_NUM_THREADS=1 -x HORDE_CYCLE_TIME=5 "
                "-x NCCL_SOCKET_IFNAME=hnet0 "
                "--mca btl tcp,self python3 train.py --lr 0.1");
}

TEST_F(MpiCommandTest, OpenMpiPrrteEmitsNoDeprecatedOption) {
  LocalMachine user = kRootOnHostA;
  user.is_root = false;
  for (const auto& args :
       {std::vector<std::string>{"-np", "5", "--tag-output", "x"},
        std::vector<std::string>{"-np", "5", "--output-filename", "/o", "x"}, TwoHosts()}) {
    const std::string command = Build(MpiFlavor::kOpenMpiPrrte, args, user);
    for (const char* deprecated :
         {"--oversubscribe", "--tag-output", "--output-filename", "plm_rsh_args", "--mca oob_"}) {
      EXPECT_EQ(command.find(deprecated), std::string::npos) << deprecated << " in " << command;
    }
  }
}

// Values that must not show in ps (the elastic job directory) go through mpirun's own
// environment; only the name is on its command line.
TEST_F(MpiCommandTest, PrivateVariablesStayOffTheCommandLine) {
  JobSpec job = MakeJobSpec(ParseOptions({"-np", "1", "true"}), kEnv, kRootOnHostA);
  job.private_env.push_back({"HORDE_ELASTIC_DIR", "/dev/shm/horde-elastic-Ab12Cd"});
  for (MpiFlavor flavor : {MpiFlavor::kOpenMpi, MpiFlavor::kOpenMpiPrrte, MpiFlavor::kHydra}) {
    MpiCommand command = BuildMpiCommand(flavor, job);
    std::string line = JoinShellWords(command.argv);
    EXPECT_EQ(line.find("horde-elastic-Ab12Cd"), std::string::npos) << line;
    EXPECT_NE(line.find("HORDE_ELASTIC_DIR"), std::string::npos) << line;
    ASSERT_EQ(command.launcher_env.size(), 1u);
    EXPECT_EQ(command.launcher_env[0].name, "HORDE_ELASTIC_DIR");
    EXPECT_EQ(command.launcher_env[0].value, "/dev/shm/horde-elastic-Ab12Cd");
  }
  EXPECT_NE(JoinShellWords(BuildMpiCommand(MpiFlavor::kHydra, job).argv)
                .find("-genvlist PATH,HORDE_LOG_LEVEL,HORDE_ELASTIC_DIR"),
            std::string::npos);
}

TEST_F(MpiCommandTest, HydraLocalTagged) {
  EXPECT_EQ(Build(MpiFlavor::kHydra, {"-np", "3", "--tag-output", "python3", "-c", "print(1)"}),
            "mpirun -n 3 -hosts localhost:2 -bind-to none -prepend-rank "
            "-genvlist PATH,HORDE_LOG_LEVEL -genv OMP_NUM_THREADS 1 python3 -c 'print(1)'");
}

TEST_F(MpiCommandTest, HydraTwoHosts) {
  EXPECT_EQ(Build(MpiFlavor::kHydra, TwoHosts()),
            "HYDRA_LAUNCHER_EXTRA_ARGS='-p 2222 -i " + key_ +
                "' "
                "mpirun -n 4 -hosts hostA:2,hostB:2 -bind-to none -iface hnet0 "
                "-genvlist PATH,HORDE_LOG_LEVEL -genv OMP_NUM_THREADS 1 -genv HORDE_CYCLE_TIME 5 "
                "-genv NCCL_SOCKET_IFNAME hnet0 --mca btl tcp,self python3 train.py --lr 0.1");
}

TEST_F(MpiCommandTest, HydraPerRankFiles) {
  EXPECT_EQ(Build(MpiFlavor::kHydra, {"-np", "1", "--output-filename", "/out", "x"}),
            "mpirun -n 1 -hosts localhost:2 -bind-to none -outfile-pattern /out/rank.%r.stdout "
            "-errfile-pattern /out/rank.%r.stderr -genvlist PATH,HORDE_LOG_LEVEL x");
}

TEST_F(MpiCommandTest, HydraTakesOneInterface) {
  EXPECT_USAGE_ERROR(Build(MpiFlavor::kHydra, {"-np", "1", "--network-interface", "a,b", "x"}),
                     "Hydra takes one --network-interface, got 'a,b'");
}

TEST_F(MpiCommandTest, KeyPathWithASpaceCannotReachSsh) {
  std::string spaced = dir_.File("a key");
  std::ofstream(spaced) << "key\n";
  for (MpiFlavor flavor : {MpiFlavor::kOpenMpi, MpiFlavor::kOpenMpiPrrte, MpiFlavor::kHydra}) {
    EXPECT_USAGE_ERROR(Build(flavor, {"-H", "far:1", "-i", spaced, "x"}), "contains a space");
  }
}

TEST_F(MpiCommandTest, ArgvKeepsWordsIntact) {
  JobSpec job = MakeJobSpec(ParseOptions({"-np", "1", "sh", "-c", "echo 'a b'"}), {}, kRootOnHostA);
  std::vector<std::string> argv = BuildMpiCommand(MpiFlavor::kOpenMpi, job).argv;
  EXPECT_EQ(argv.back(), "echo 'a b'");
  EXPECT_EQ(argv.front(), "mpirun");
}

}  // namespace
}  // namespace horde::launcher
