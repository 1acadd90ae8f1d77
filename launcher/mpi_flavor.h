#pragma once

#include <optional>
#include <string>

#include "launcher/environment.h"

namespace horde::launcher {

// The command-line dialects of mpirun: Open MPI's up to 4.x (ORTE), Open MPI's from 5.0
// on (PRRTE, which deprecates some of the older options), and Hydra's (MPICH, and the
// MPIs built on it such as Intel MPI and MVAPICH).
enum class MpiFlavor { kOpenMpi, kOpenMpiPrrte, kHydra };

struct MpiInstall {
  MpiFlavor flavor = MpiFlavor::kOpenMpi;
  std::string description;  // "Open MPI 4.1.4", "Open MPI 5.0.7 (PRRTE)"
  std::string path;         // of mpirun
  std::string name;         // "Open MPI 5.0.7", "MPICH 4.0.2": the product and its version
};

// Recognizes the output of `mpirun --version`; nullopt for anything else.
std::optional<MpiInstall> ParseMpiVersion(const std::string& output);

// Finds mpirun on env's PATH and asks its version. Throws UsageError when there is no
// mpirun or it is not one horderun knows.
MpiInstall DetectMpi(const Environment& env);

}  // namespace horde::launcher
