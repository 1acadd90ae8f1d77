#pragma once

#include <string>
#include <vector>

#include "launcher/environment.h"

namespace horde::launcher {

// The variables of `env` that every rank gets, in a stable order: PATH,
// LD_LIBRARY_PATH, PYTHONPATH and VIRTUAL_ENV, then every HORDE_*, HOROVOD_*, NCCL_*
// and OMP_* variable by name. Names in `overridden` are left out: horderun sets them.
// Throws UsageError for a forwarded variable whose name is not an identifier or whose
// value holds a line break: the MPIs pass names in lists and values through their own
// launch protocols, where either could be read as more than one variable.
std::vector<std::string> ForwardedVariables(const Environment& env,
                                            const std::vector<EnvVar>& overridden);

}  // namespace horde::launcher
