#include "launcher/mpi_command.h"

#include "launcher/hydra_command.h"
#include "launcher/open_mpi_command.h"
#include "launcher/shell_words.h"

namespace horde::launcher {

MpiCommand BuildMpiCommand(MpiFlavor flavor, const JobSpec& job) {
  switch (flavor) {
    case MpiFlavor::kOpenMpi: return BuildOpenMpiCommand(job, /*prrte=*/false);
    case MpiFlavor::kOpenMpiPrrte: return BuildOpenMpiCommand(job, /*prrte=*/true);
    case MpiFlavor::kHydra: return BuildHydraCommand(job);
  }
  return {};
}

void AppendWords(std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  argv.insert(argv.end(), words);
}

std::string FormatCommand(const MpiCommand& command) {
  std::string line;
  for (const EnvVar& var : command.launcher_env) {
    line += var.name + "=" + QuoteShellWord(var.value) + " ";
  }
  return line + JoinShellWords(command.argv);
}

}  // namespace horde::launcher
