#include "launcher/elastic_mode.h"

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <system_error>

#include "launcher/child_process.h"
#include "launcher/host_name.h"
#include "launcher/job_spec.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr auto kOmpiInfoTimeout = std::chrono::seconds(20);

// ompi_info beside mpirun, else beside the file mpirun links to (Debian's alternatives,
// a bin/ of symbolic links into an install tree); empty when neither has one.
std::string OmpiInfoBeside(const std::string& mpirun_path) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path canonical = fs::weakly_canonical(mpirun_path, error);
  for (const fs::path& mpirun : {fs::path(mpirun_path), canonical}) {
    if (mpirun.empty()) continue;
    const fs::path candidate = mpirun.parent_path() / "ompi_info";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string WhyNotInPlace(const MpiInstall& mpi, const std::function<UlfmProbe()>& probe) {
  if (mpi.flavor == MpiFlavor::kOpenMpi) {
    return mpi.name + " has no fault-tolerance extension for in-place recovery";
  }
  if (mpi.flavor == MpiFlavor::kHydra) {
    return mpi.name + " has no fault-tolerance extension that horderun can use for in-place " +
           "recovery";
  }
  UlfmProbe ulfm = probe();
  if (ulfm.ulfm == true) return "";
  if (ulfm.ulfm == false) {
    return mpi.name + " was built without its fault-tolerance extension (ompi_info: FT MPI " +
           "support: no)";
  }
  return "cannot tell whether " + mpi.name + " has its fault-tolerance extension: " + ulfm.detail;
}

}  // namespace

std::optional<ElasticMode> ParseElasticMode(const std::string& value) {
  if (value == "restart") return ElasticMode::kRestart;
  if (value == "in-place") return ElasticMode::kInPlace;
  if (value == "auto") return ElasticMode::kAuto;
  return std::nullopt;
}

UlfmProbe ParseOmpiInfo(const std::string& output) {
  static const std::regex kParsable(R"(^options:ft_mpi_support:"?(\w+))");
  static const std::regex kPlain(R"(^\s*FT MPI support:\s*(\w+))");
  std::istringstream lines(output);
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, match, kParsable) || std::regex_search(line, match, kPlain)) {
      return {match[1].str() == "yes", ""};
    }
  }
  return {std::nullopt, "ompi_info prints no 'FT MPI support' line"};
}

UlfmProbe ProbeUlfm(const std::string& mpirun_path) {
  const std::string ompi_info = OmpiInfoBeside(mpirun_path);
  if (ompi_info.empty()) return {std::nullopt, "no ompi_info beside " + mpirun_path};
  const std::string command = ompi_info + " --parsable";
  try {
    CapturedRun run = RunCaptured({ompi_info, "--parsable"}, kOmpiInfoTimeout);
    if (run.timed_out) {
      return {std::nullopt, command + " did not answer within " +
                                std::to_string(kOmpiInfoTimeout.count()) + " s"};
    }
    if (run.exit_code != 0) {
      return {std::nullopt, command + " failed with exit code " + std::to_string(run.exit_code) +
                                " (" + QuotedForMessage(LastLine(run.output)) + ")"};
    }
    UlfmProbe probe = ParseOmpiInfo(run.output);
    if (!probe.ulfm) probe.detail = command + " prints no 'ft_mpi_support' line";
    return probe;
  } catch (const std::system_error& error) {
    return {std::nullopt, "cannot run " + command + ": " + error.what()};
  }
}

ElasticModeChoice ChooseElasticMode(ElasticMode requested, const MpiInstall& mpi,
                                    const std::function<UlfmProbe()>& probe) {
  if (requested == ElasticMode::kRestart) return {};
  const std::string why_not = WhyNotInPlace(mpi, probe);
  if (why_not.empty()) {
    return {true, "elastic mode: in place (" + mpi.name +
                      " with ULFM: survivors of a lost rank go on in the same processes)"};
  }
  if (requested == ElasticMode::kInPlace) {
    throw UsageError("--elastic-mode in-place: " + why_not +
                     "; in-place recovery needs Open MPI 5 or newer with ULFM (ompi_info: FT "
                     "MPI support: yes): use --elastic-mode restart, or auto");
  }
  return {false, "elastic mode: restart (" + why_not +
                     ": a lost rank restarts the generation from the last commit)"};
}

void ApplyElasticMode(bool in_place, int min_np, JobSpec& job) {
  if (!in_place) return;
  job.fault_tolerant = true;
  job.set_env.push_back({"HORDE_ELASTIC_IN_PLACE", "1"});
  job.set_env.push_back({"HORDE_ELASTIC_MIN_NP", std::to_string(min_np)});
}

}  // namespace horde::launcher
