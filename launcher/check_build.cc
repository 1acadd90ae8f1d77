#include "launcher/check_build.h"

#include <exception>

#include "launcher/child_process.h"
#include "launcher/mpi_flavor.h"
#include "launcher/version.h"

namespace horde::launcher {
namespace {

// Prints the lines after "MPI:"; everything comes from horde's own API and torch.
const char* const kPythonProbe = R"py(
import horde, torch, horde.torch as hvd
yes = lambda built: "yes" if built else "no"
print("horde:   %s (MPI: %s, NCCL: %s, CUDA: %s)" % (horde.__version__, yes(hvd.mpi_built()),
      yes(hvd.nccl_built()), yes(hvd.cuda_built())))
print("torch:   %s (CUDA: %s, GPUs visible: %d)" % (torch.__version__, torch.version.cuda or "none",
      torch.cuda.device_count()))
)py";

std::string DescribeMpi(const Environment& env) {
  try {
    MpiInstall mpi = DetectMpi(env);
    return mpi.description + " (" + mpi.path + ")";
  } catch (const std::exception& error) {
    return std::string("none usable: ") + error.what();
  }
}

std::string FindPython(const Environment& env) {
  auto chosen = env.find("HORDERUN_PYTHON");
  return FindProgram(chosen == env.end() ? "python3" : chosen->second, env);
}

std::string DescribeHorde(const std::string& python) {
  if (python.empty()) return "horde:   unknown (no $HORDERUN_PYTHON, no python3 on PATH)\n";
  try {
    CapturedRun run = RunCaptured({python, "-c", kPythonProbe}, std::chrono::seconds(60));
    if (run.exit_code == 0 && !run.timed_out) return run.output;
    return "horde:   not importable by " + python + " (" + LastLine(run.output) + ")\n";
  } catch (const std::exception& error) {
    return "horde:   cannot run " + python + " (" + error.what() + ")\n";
  }
}

}  // namespace

std::string DescribeBuild(const Environment& env) {
  std::string python = FindPython(env);
  return "horderun " + std::string(kVersion) + "\n" + "MPI:     " + DescribeMpi(env) + "\n" +
         "Python:  " + (python.empty() ? "not found" : python) + "\n" + DescribeHorde(python);
}

}  // namespace horde::launcher
