#include "launcher/launcher_options.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace horde::launcher {
namespace {

using Words = std::vector<std::string>;

TEST(LauncherOptions, ParsesEveryOptionAndStopsAtTheCommand) {
  LauncherOptions o = ParseOptions({"-np",
                                    "4",
                                    "-H",
                                    "a:2,b:2",
                                    "-p",
                                    "2222",
                                    "-i",
                                    "/k/id",
                                    "--network-interface",
                                    "eth1",
                                    "--start-timeout",
                                    "5",
                                    "--mpi-args",
                                    "--mca btl tcp,self",
                                    "--output-filename",
                                    "logs",
                                    "--verbose",
                                    "python3",
                                    "train.py",
                                    "-np",
                                    "9",
                                    "--verbose"});
  EXPECT_EQ(o.num_proc, 4);
  EXPECT_EQ(o.hosts, (std::vector<Host>{{"a", 2}, {"b", 2}}));
  EXPECT_EQ(o.ssh_port, 2222);
  EXPECT_EQ(o.ssh_identity_file, "/k/id");
  EXPECT_EQ(o.network_interface, "eth1");
  EXPECT_EQ(o.start_timeout_seconds, 5);
  EXPECT_EQ(o.mpi_args, (Words{"--mca", "btl", "tcp,self"}));
  EXPECT_EQ(o.output_dir, "logs");
  EXPECT_TRUE(o.verbose);
  EXPECT_FALSE(o.dry_run);
  EXPECT_EQ(o.command, (Words{"python3", "train.py", "-np", "9", "--verbose"}));
}

TEST(LauncherOptions, LongFormsAndEqualsValues) {
  LauncherOptions o = ParseOptions(
      {"--num-proc=2", "--hosts=x:2", "--ssh-port=22", "--dry-run", "--", "-weird", "arg"});
  EXPECT_EQ(o.num_proc, 2);
  EXPECT_EQ(o.ssh_port, 22);
  EXPECT_TRUE(o.dry_run);
  EXPECT_EQ(o.command, (Words{"-weird", "arg"}));
}

TEST(LauncherOptions, DefaultsAreOff) {
  LauncherOptions o = ParseOptions({"python3"});
  EXPECT_FALSE(o.num_proc.has_value());
  EXPECT_TRUE(o.hosts.empty());
  EXPECT_EQ(o.start_timeout_seconds, 30);
  EXPECT_TRUE(o.tuning_env.empty());
}

TEST(LauncherOptions, TuningFlagsBecomeVariables) {
  LauncherOptions o = ParseOptions({"--fusion-threshold-mb",
                                    "64",
                                    "--cycle-time-ms",
                                    "2.5",
                                    "--cache-capacity",
                                    "0",
                                    "--timeline-filename",
                                    "/tmp/t.json",
                                    "--timeline-mark-cycles",
                                    "--autotune",
                                    "--autotune-log-file",
                                    "a.csv",
                                    "--stall-check-seconds",
                                    "60",
                                    "--stall-shutdown-seconds",
                                    "0",
                                    "--hierarchical-allreduce",
                                    "--log-level",
                                    "debug",
                                    "--cycle-time-ms=3",
                                    "cmd"});
  EXPECT_EQ(o.tuning_env, (std::vector<EnvVar>{
                              {"HORDE_FUSION_THRESHOLD", "67108864"},
                              {"HORDE_CYCLE_TIME", "3"},  // the last one wins
                              {"HORDE_CACHE_CAPACITY", "0"},
                              {"HORDE_TIMELINE", "/tmp/t.json"},
                              {"HORDE_TIMELINE_MARK_CYCLES", "1"},
                              {"HORDE_AUTOTUNE", "1"},
                              {"HORDE_AUTOTUNE_LOG", "a.csv"},
                              {"HORDE_STALL_CHECK_TIME_SECONDS", "60"},
                              {"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "0"},
                              {"HORDE_HIERARCHICAL_ALLREDUCE", "1"},
                              {"HORDE_LOG_LEVEL", "debug"},
                          }));
}

TEST(LauncherOptions, HelpVersionAndCheckBuildNeedNoCommand) {
  EXPECT_TRUE(ParseOptions({"--help"}).show_help);
  EXPECT_TRUE(ParseOptions({"-h"}).show_help);
  EXPECT_TRUE(ParseOptions({"--version"}).show_version);
  EXPECT_TRUE(ParseOptions({"--check-build"}).check_build);
  std::string help = HelpText();
  for (const char* flag : {"-np", "--hostfile", "--mpi-args", "--dry-run", "--log-level"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

TEST(LauncherOptions, ProbeTopologyRunsNoCommandOfItsOwn) {
  LauncherOptions options = ParseOptions({"-H", "a:1,b:1", "--probe-topology", "links.txt"});
  EXPECT_EQ(options.probe_topology, "links.txt");
  EXPECT_TRUE(options.command.empty());
  EXPECT_USAGE_ERROR(ParseOptions({"--probe-topology", "links.txt", "python3", "train.py"}),
                     "--probe-topology runs its own measurement: drop the command");
  EXPECT_USAGE_ERROR(ParseOptions({"--probe-topology=", "x"}), "--probe-topology expects a file");
  EXPECT_EQ(ParseOptions({"--topology", "off", "x"}).tuning_env[0].value, "off");
}

TEST(LauncherOptions, RejectsBadNumbers) {
  EXPECT_USAGE_ERROR(ParseOptions({"-np", "0", "x"}), "-np expects a whole number from 1");
  EXPECT_USAGE_ERROR(ParseOptions({"-np", "-2", "x"}), "got '-2'");
  EXPECT_USAGE_ERROR(ParseOptions({"-np", "four", "x"}), "got 'four'");
  EXPECT_USAGE_ERROR(ParseOptions({"-p", "70000", "x"}), "--ssh-port expects a whole number");
  EXPECT_USAGE_ERROR(ParseOptions({"--start-timeout", "0", "x"}), "--start-timeout expects");
}

TEST(LauncherOptions, RejectsBadTuningValues) {
  EXPECT_USAGE_ERROR(ParseOptions({"--fusion-threshold-mb", "-1", "x"}),
                     "--fusion-threshold-mb expects a non-negative whole number of MB, got '-1'");
  EXPECT_USAGE_ERROR(ParseOptions({"--fusion-threshold-mb", "1.5", "x"}), "got '1.5'");
  EXPECT_USAGE_ERROR(ParseOptions({"--cycle-time-ms", "abc", "x"}),
                     "--cycle-time-ms expects a positive number, got 'abc'");
  EXPECT_USAGE_ERROR(ParseOptions({"--cycle-time-ms", "0", "x"}), "got '0'");
  EXPECT_USAGE_ERROR(ParseOptions({"--cycle-time-ms", "inf", "x"}), "got 'inf'");
  EXPECT_USAGE_ERROR(ParseOptions({"--cache-capacity", "-5", "x"}),
                     "--cache-capacity expects a non-negative integer, got '-5'");
  EXPECT_USAGE_ERROR(ParseOptions({"--stall-shutdown-seconds", "1e3", "x"}), "got '1e3'");
  // The runtime needs a positive check period: 0 is refused here, not at init().
  EXPECT_USAGE_ERROR(ParseOptions({"--stall-check-seconds", "0", "x"}),
                     "--stall-check-seconds expects a positive number, got '0'");
  EXPECT_USAGE_ERROR(ParseOptions({"--log-level", "loud", "x"}),
                     "--log-level expects one of trace, debug, info, warning, error, fatal");
  EXPECT_USAGE_ERROR(ParseOptions({"--timeline-filename=", "x"}), "expects a file name");
}

TEST(LauncherOptions, RejectsBadForms) {
  EXPECT_USAGE_ERROR(ParseOptions({"--frobnicate", "x"}),
                     "unknown option '--frobnicate': see horderun --help");
  EXPECT_USAGE_ERROR(ParseOptions({"--bogus=1", "x"}), "unknown option '--bogus'");
  EXPECT_USAGE_ERROR(ParseOptions({"-np", "2"}), "no command to run");
  EXPECT_USAGE_ERROR(ParseOptions({}), "no command to run");
  EXPECT_USAGE_ERROR(ParseOptions({"-H"}), "-H needs a value");
  EXPECT_USAGE_ERROR(ParseOptions({"--dry-run=yes", "x"}), "--dry-run takes no value");
  EXPECT_USAGE_ERROR(ParseOptions({"-H", "a:2", "--hostfile", "f", "x"}),
                     "-H and --hostfile both give hosts");
  EXPECT_USAGE_ERROR(ParseOptions({"-H", "a:x", "cmd"}), "'a:x' has slots 'x'");
  EXPECT_USAGE_ERROR(ParseOptions({"--mpi-args", "'oops", "x"}), "unterminated");
}

TEST(LauncherOptions, NetworkInterfaceTakesInterfaceNamesOnly) {
  EXPECT_EQ(ParseOptions({"--network-interface", "eth0,ib0,bond0.100", "x"}).network_interface,
            "eth0,ib0,bond0.100");
  EXPECT_USAGE_ERROR(ParseOptions({"--network-interface", "eth0 --mca x y", "x"}),
                     "--network-interface: 'eth0 --mca x y' is not an interface name");
  EXPECT_USAGE_ERROR(ParseOptions({"--network-interface", "-x", "x"}), "is not an interface name");
  EXPECT_USAGE_ERROR(ParseOptions({"--network-interface", "eth0,", "x"}),
                     "expects interface names");
  EXPECT_USAGE_ERROR(ParseOptions({"--network-interface", "averyveryverylong0", "x"}),
                     "is not an interface name");
}

TEST(LauncherOptions, BlacklistCooldownRangeTakesTwoWordsAsHorovodsDoes) {
  LauncherOptions options = ParseOptions(
      {"--host-discovery-script", "d.sh", "--blacklist-cooldown-range", "10", "100", "x"});
  ASSERT_TRUE(options.blacklist_cooldown);
  EXPECT_EQ(options.blacklist_cooldown->min_seconds, 10);
  EXPECT_EQ(options.blacklist_cooldown->max_seconds, 100);
  EXPECT_EQ(options.command, Words{"x"});
  const std::string expected = "--blacklist-cooldown-range expects two whole numbers of seconds";
  EXPECT_USAGE_ERROR(ParseOptions({"--host-discovery-script", "d", "--blacklist-cooldown-range",
                                   "100", "10", "x"}),
                     expected +
                         ", MIN MAX with 1 <= MIN <= MAX"
                         " <= 604800, got '100 10': e.g. --blacklist-cooldown-range 10 100");
  EXPECT_USAGE_ERROR(
      ParseOptions({"--host-discovery-script", "d", "--blacklist-cooldown-range=10", "x"}),
      expected);
  EXPECT_USAGE_ERROR(
      ParseOptions({"--blacklist-cooldown-range", "1"}),
      "--blacklist-cooldown-range needs a value: --blacklist-cooldown-range MIN MAX");
  EXPECT_USAGE_ERROR(ParseOptions({"--blacklist-cooldown-range", "1", "2", "x"}),
                     "are for elastic jobs: add --host-discovery-script SCRIPT");
}

TEST(LauncherOptions, ElasticModeIsRestartInPlaceOrAutoForElasticJobsOnly) {
  EXPECT_EQ(ParseOptions({"--host-discovery-script", "d.sh", "x"}).elastic_mode, std::nullopt);
  EXPECT_EQ(ParseOptions({"--host-discovery-script", "d.sh", "--elastic-mode", "in-place", "x"})
                .elastic_mode,
            ElasticMode::kInPlace);
  EXPECT_EQ(
      ParseOptions({"--host-discovery-script", "d.sh", "--elastic-mode=restart", "x"}).elastic_mode,
      ElasticMode::kRestart);
  EXPECT_EQ(
      ParseOptions({"--elastic-mode", "auto", "--host-discovery-script", "d.sh", "x"}).elastic_mode,
      ElasticMode::kAuto);
  EXPECT_USAGE_ERROR(
      ParseOptions({"--host-discovery-script", "d.sh", "--elastic-mode", "inplace", "x"}),
      "--elastic-mode expects restart, in-place or auto, got 'inplace': e.g. --elastic-mode "
      "restart");
  EXPECT_USAGE_ERROR(ParseOptions({"--elastic-mode", "restart", "x"}),
                     "--elastic-mode is for elastic jobs: add --host-discovery-script SCRIPT");
  EXPECT_USAGE_ERROR(ParseOptions({"--host-discovery-script", "d.sh", "--elastic-mode"}),
                     "--elastic-mode needs a value: --elastic-mode restart|in-place|auto");
  EXPECT_NE(HelpText().find("  --elastic-mode restart|in-place|auto  elastic: on a lost rank"),
            std::string::npos)
      << HelpText();
}

TEST(LauncherOptions, HelpSaysMpiArgsAreATrustedPassThrough) {
  EXPECT_NE(HelpText().find("passed on unchecked (trusted)"), std::string::npos);
}

}  // namespace
}  // namespace horde::launcher
