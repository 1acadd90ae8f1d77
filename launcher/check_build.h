#pragma once

#include <string>

#include "launcher/environment.h"

namespace horde::launcher {

// What this installation supports, for --check-build: horderun's version, the MPI on
// PATH, and what the horde package reports through $HORDERUN_PYTHON (which the
// `horderun` script of a Python environment sets to its interpreter), else python3 on
// PATH. Never throws: a missing part is reported as missing.
std::string DescribeBuild(const Environment& env);

}  // namespace horde::launcher
