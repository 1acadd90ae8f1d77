#include "launcher/mpi_flavor.h"

#include <gtest/gtest.h>

#include "launcher/child_process.h"
#include "test_util.h"

namespace horde::launcher {
namespace {

TEST(MpiFlavor, RecognizesOpenMpi) {
  auto mpi = ParseMpiVersion(
      "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n");
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->flavor, MpiFlavor::kOpenMpi);
  EXPECT_EQ(mpi->description, "Open MPI 4.1.4");
}

TEST(MpiFlavor, RecognizesOpenMpi5AsPrrte) {
  auto mpi = ParseMpiVersion(  // Debian 13's
      "mpirun (Open MPI) 5.0.7\n\nReport bugs to https://www.open-mpi.org/community/help/\n");
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->flavor, MpiFlavor::kOpenMpiPrrte);
  EXPECT_EQ(mpi->description, "Open MPI 5.0.7 (PRRTE)");
  EXPECT_EQ(mpi->name, "Open MPI 5.0.7");
  EXPECT_EQ(ParseMpiVersion("mpirun (Open MPI) 6.0.0rc1\n")->flavor, MpiFlavor::kOpenMpiPrrte);
  EXPECT_EQ(ParseMpiVersion("mpirun (Open MPI) 3.1.6\n")->flavor, MpiFlavor::kOpenMpi);
  EXPECT_EQ(ParseMpiVersion("mpirun (Open MPI) 4.1.7a1\n")->flavor, MpiFlavor::kOpenMpi);
}

TEST(MpiFlavor, RecognizesMpichHydra) {
  auto mpi = ParseMpiVersion(  // MPICH 4.0.2 of Debian 12
      "HYDRA build details:\n"
      "    Version:                                 4.0.2\n"
      "    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n"
      "    Launchers available:                     ssh rsh fork slurm ll lsf sge manual\n");
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->flavor, MpiFlavor::kHydra);
  EXPECT_EQ(mpi->description, "MPICH 4.0.2 (Hydra)");
  EXPECT_EQ(mpi->name, "MPICH 4.0.2");
}

TEST(MpiFlavor, RecognizesIntelMpiAsHydra) {
  auto mpi = ParseMpiVersion(
      "Intel(R) MPI Library for Linux* OS, Version 2021.6 Build 20220227 (id: 28877f3f32)\n");
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->flavor, MpiFlavor::kHydra);
  EXPECT_EQ(mpi->description, "Intel MPI 2021.6 (Hydra)");
}

TEST(MpiFlavor, RejectsOthers) {
  EXPECT_FALSE(ParseMpiVersion("").has_value());
  EXPECT_FALSE(ParseMpiVersion("bash: mpirun: command not found").has_value());
}

TEST(MpiFlavor, MissingMpirunIsAUsageError) {
  EXPECT_USAGE_ERROR(DetectMpi({{"PATH", "/nonexistent"}}), "mpirun not found on PATH: install");
}

TEST(MpiFlavor, FindsTheInstalledOne) {
  Environment env = CurrentEnvironment();
  if (FindProgram("mpirun", env).empty()) GTEST_SKIP() << "no mpirun on PATH";
  MpiInstall mpi = DetectMpi(env);
  EXPECT_FALSE(mpi.description.empty());
  EXPECT_EQ(mpi.path, FindProgram("mpirun", env));
}

}  // namespace
}  // namespace horde::launcher
