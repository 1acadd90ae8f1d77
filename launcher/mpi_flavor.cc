#include "launcher/mpi_flavor.h"

#include <regex>
#include <string>

#include "launcher/child_process.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

// The first capture group of `pattern` in `text`, or empty.
std::string Capture(const std::string& text, const char* pattern) {
  std::smatch match;
  return std::regex_search(text, match, std::regex(pattern)) ? match[1].str() : "";
}

}  // namespace

std::optional<MpiInstall> ParseMpiVersion(const std::string& output) {
  std::string version = Capture(output, R"(\(Open MPI\) (\S+))");
  if (!version.empty()) {
    // Open MPI 5 replaced its runtime (ORTE) with PRRTE, and mpirun's options with it.
    const std::string major = Capture(version, R"(^(\d{1,6})\b)");
    const std::string name = "Open MPI " + version;
    if (!major.empty() && std::stoi(major) >= 5) {
      return MpiInstall{MpiFlavor::kOpenMpiPrrte, name + " (PRRTE)", "", name};
    }
    return MpiInstall{MpiFlavor::kOpenMpi, name, "", name};
  }
  if (output.find("HYDRA build details") != std::string::npos) {
    const std::string name = "MPICH " + Capture(output, R"(Version:\s+(\S+))");
    return MpiInstall{MpiFlavor::kHydra, name + " (Hydra)", "", name};
  }
  version = Capture(output, R"(Intel\(R\) MPI Library.*Version (\S+))");
  if (!version.empty()) {
    const std::string name = "Intel MPI " + version;
    return MpiInstall{MpiFlavor::kHydra, name + " (Hydra)", "", name};
  }
  return std::nullopt;
}

MpiInstall DetectMpi(const Environment& env) {
  std::string path = FindProgram("mpirun", env);
  if (path.empty()) {
    throw UsageError(
        "mpirun not found on PATH: install Open MPI (Debian: apt-get install "
        "openmpi-bin) or MPICH, or add its bin folder to PATH");
  }
  CapturedRun run = RunCaptured({path, "--version"}, std::chrono::seconds(20));
  std::optional<MpiInstall> mpi = ParseMpiVersion(run.output);
  if (!mpi) {
    throw UsageError("cannot tell which MPI " + path + " is (`mpirun --version` said '" +
                     LastLine(run.output) + "'): horderun supports Open MPI and MPICH/Hydra");
  }
  mpi->path = path;
  return *mpi;
}

}  // namespace horde::launcher
