// How an elastic job survives a lost rank: restart, or in place with Open MPI 5's ULFM.
#include "launcher/elastic_mode.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "launcher/job_spec.h"
#include "launcher/mpi_command.h"
#include "test_util.h"
#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

// What Debian's packages print (ompi_info, and ompi_info --parsable), in part.
const char kOmpi5Plain[] =
    "                Open MPI: 5.0.7\n"
    "          MPI extensions: affinity, cuda, ftmpi, rocm, shortfloat\n"
    "          FT MPI support: yes\n"
    "                MCA coll: ftagree (MCA v2.1.0, API v2.4.0, Component v5.0.7)\n";
const char kOmpi5Parsable[] =
    "ompi:version:full:5.0.7\n"
    "options:mpi_ext:affinity, cuda, ftmpi, rocm, shortfloat\n"
    "options:ft_support:yes\n"
    "options:ft_mpi_support:yes\n";
const char kOmpi41Parsable[] =
    "ompi:version:full:4.1.4\n"
    "options:mpi_ext:affinity, cuda, pcollreq\n"
    "options:ft_support:\"no (checkpoint thread: no)\"\n";

const MpiInstall kOpenMpi41{MpiFlavor::kOpenMpi, "Open MPI 4.1.4", "/usr/bin/mpirun",
                            "Open MPI 4.1.4"};
const MpiInstall kOpenMpi5{MpiFlavor::kOpenMpiPrrte, "Open MPI 5.0.7 (PRRTE)", "/usr/bin/mpirun",
                           "Open MPI 5.0.7"};
const MpiInstall kMpich{MpiFlavor::kHydra, "MPICH 4.0.2 (Hydra)", "/usr/bin/mpirun", "MPICH 4.0.2"};

std::function<UlfmProbe()> Says(const std::string& output) {
  return [output] { return ParseOmpiInfo(output); };
}
UlfmProbe NotRun() {
  ADD_FAILURE() << "ompi_info ran, and need not have";
  return {};
}

TEST(ElasticMode, ParsesTheOptionsValues) {
  EXPECT_EQ(ParseElasticMode("restart"), ElasticMode::kRestart);
  EXPECT_EQ(ParseElasticMode("in-place"), ElasticMode::kInPlace);
  EXPECT_EQ(ParseElasticMode("auto"), ElasticMode::kAuto);
  EXPECT_EQ(ParseElasticMode("inplace"), std::nullopt);
  EXPECT_EQ(ParseElasticMode(""), std::nullopt);
}

TEST(ElasticMode, ReadsOmpiInfo) {
  EXPECT_EQ(ParseOmpiInfo(kOmpi5Plain).ulfm, true);
  EXPECT_EQ(ParseOmpiInfo(kOmpi5Parsable).ulfm, true);
  EXPECT_EQ(ParseOmpiInfo("options:ft_mpi_support:no\n").ulfm, false);
  EXPECT_EQ(ParseOmpiInfo("          FT MPI support: no\n").ulfm, false);
  // Open MPI 4.1: checkpoint support is not ULFM, and no line says anything of ULFM.
  EXPECT_EQ(ParseOmpiInfo(kOmpi41Parsable).ulfm, std::nullopt);
  EXPECT_EQ(ParseOmpiInfo("   FT Checkpoint support: no (checkpoint thread: no)\n").ulfm,
            std::nullopt);
}

TEST(ElasticMode, AutoGoesInPlaceWithOpenMpi5AndUlfm) {
  ElasticModeChoice choice = ChooseElasticMode(ElasticMode::kAuto, kOpenMpi5, Says(kOmpi5Plain));
  EXPECT_TRUE(choice.in_place);
  EXPECT_EQ(choice.line,
            "elastic mode: in place (Open MPI 5.0.7 with ULFM: survivors of a lost rank go on "
            "in the same processes)");
  EXPECT_TRUE(ChooseElasticMode(ElasticMode::kInPlace, kOpenMpi5, Says(kOmpi5Parsable)).in_place);
}

TEST(ElasticMode, AutoRestartsOtherwiseWithOneLineSayingWhy) {
  const std::string restarts = ": a lost rank restarts the generation from the last commit)";
  ElasticModeChoice choice = ChooseElasticMode(ElasticMode::kAuto, kOpenMpi41, NotRun);
  EXPECT_FALSE(choice.in_place);
  EXPECT_EQ(choice.line,
            "elastic mode: restart (Open MPI 4.1.4 has no fault-tolerance extension for "
            "in-place recovery" +
                restarts);
  EXPECT_EQ(ChooseElasticMode(ElasticMode::kAuto, kMpich, NotRun).line,
            "elastic mode: restart (MPICH 4.0.2 has no fault-tolerance extension that horderun "
            "can use for in-place recovery" +
                restarts);
  EXPECT_EQ(
      ChooseElasticMode(ElasticMode::kAuto, kOpenMpi5, Says("options:ft_mpi_support:no")).line,
      "elastic mode: restart (Open MPI 5.0.7 was built without its fault-tolerance "
      "extension (ompi_info: FT MPI support: no)" +
          restarts);
  auto unknown = [] { return UlfmProbe{std::nullopt, "no ompi_info beside /opt/x/bin/mpirun"}; };
  EXPECT_EQ(ChooseElasticMode(ElasticMode::kAuto, kOpenMpi5, unknown).line,
            "elastic mode: restart (cannot tell whether Open MPI 5.0.7 has its fault-tolerance "
            "extension: no ompi_info beside /opt/x/bin/mpirun" +
                restarts);
}

TEST(ElasticMode, RestartIsTodaysBehaviourWithNothingToSay) {
  for (const MpiInstall& mpi : {kOpenMpi41, kOpenMpi5, kMpich}) {
    ElasticModeChoice choice = ChooseElasticMode(ElasticMode::kRestart, mpi, NotRun);
    EXPECT_FALSE(choice.in_place);
    EXPECT_EQ(choice.line, "");
  }
}

TEST(ElasticMode, InPlaceWhereItCannotBeIsAUsageError) {
  EXPECT_USAGE_ERROR(ChooseElasticMode(ElasticMode::kInPlace, kOpenMpi41, NotRun),
                     "--elastic-mode in-place: Open MPI 4.1.4 has no fault-tolerance extension "
                     "for in-place recovery; in-place recovery needs Open MPI 5 or newer with "
                     "ULFM (ompi_info: FT MPI support: yes): use --elastic-mode restart, or auto");
  EXPECT_USAGE_ERROR(ChooseElasticMode(ElasticMode::kInPlace, kMpich, NotRun),
                     "--elastic-mode in-place: MPICH 4.0.2 has no");
  EXPECT_USAGE_ERROR(
      ChooseElasticMode(ElasticMode::kInPlace, kOpenMpi5, Says("options:ft_mpi_support:no")),
      "--elastic-mode in-place: Open MPI 5.0.7 was built without");
}

void WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
}

// ompi_info beside mpirun, or beside the file mpirun links to (Debian's alternatives).
TEST(ElasticMode, ProbesTheOmpiInfoBesideMpirun) {
  const test::TempDir dir;
  std::filesystem::create_directories(dir.File("real/bin"));
  std::filesystem::create_directories(dir.File("links"));
  WriteScript(dir.File("real/bin/mpirun"), "exit 0");
  std::filesystem::create_symlink(dir.File("real/bin/mpirun"), dir.File("links/mpirun"));
  UlfmProbe missing = ProbeUlfm(dir.File("links/mpirun"));
  EXPECT_EQ(missing.ulfm, std::nullopt);
  EXPECT_EQ(missing.detail, "no ompi_info beside " + dir.File("links/mpirun"));

  WriteScript(dir.File("real/bin/ompi_info"),
              "[ \"$1\" = --parsable ] || exit 3\necho options:ft_mpi_support:yes");
  EXPECT_EQ(ProbeUlfm(dir.File("links/mpirun")).ulfm, true);

  WriteScript(dir.File("links/ompi_info"), "echo 'ompi_info: broken' >&2; exit 1");
  UlfmProbe failed = ProbeUlfm(dir.File("links/mpirun"));
  EXPECT_EQ(failed.ulfm, std::nullopt);
  EXPECT_EQ(failed.detail, dir.File("links/ompi_info") +
                               " --parsable failed with exit code 1 ('ompi_info: broken')");

  WriteScript(dir.File("links/ompi_info"), "echo 'ompi:version:full:5.0.7'");
  EXPECT_EQ(ProbeUlfm(dir.File("links/mpirun")).detail,
            dir.File("links/ompi_info") + " --parsable prints no 'ft_mpi_support' line");
}

// In place: mpirun with ULFM and the ranks' variables; a restart has neither.
TEST(ElasticMode, InPlaceAddsUlfmAndTheRanksVariables) {
  const LocalMachine machine = {2, false, "hostA", {}, "/work"};
  LauncherOptions options = ParseOptions({"-np", "3", "-H", "localhost:3", "python3", "t.py"});
  JobSpec job = MakeJobSpec(options, {{"PATH", "/usr/bin"}}, machine);
  JobSpec in_place = job;
  ApplyElasticMode(true, 2, in_place);
  EXPECT_EQ(FormatCommand(BuildMpiCommand(MpiFlavor::kOpenMpiPrrte, in_place)),
            "mpirun --with-ft ulfm -np 3 -H localhost:3 --map-by slot --bind-to none -x PATH "
            "-x OMP_NUM_THREADS=1 -x HORDE_ELASTIC_IN_PLACE=1 -x HORDE_ELASTIC_MIN_NP=2 python3 "
            "t.py");
  ApplyElasticMode(false, 2, job);
  EXPECT_EQ(FormatCommand(BuildMpiCommand(MpiFlavor::kOpenMpiPrrte, job)),
            "mpirun -np 3 -H localhost:3 --map-by slot --bind-to none -x PATH "
            "-x OMP_NUM_THREADS=1 python3 t.py");
  EXPECT_USAGE_ERROR(BuildMpiCommand(MpiFlavor::kOpenMpi, in_place),
                     "in-place recovery needs Open MPI 5 or newer");
  EXPECT_USAGE_ERROR(BuildMpiCommand(MpiFlavor::kHydra, in_place),
                     "in-place recovery needs Open MPI 5 or newer");
}

}  // namespace
}  // namespace horde::launcher
