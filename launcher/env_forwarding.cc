#include "launcher/env_forwarding.h"

#include <algorithm>

namespace horde::launcher {
namespace {

const char* const kNames[] = {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV"};
const char* const kPrefixes[] = {"HORDE_", "HOROVOD_", "NCCL_", "OMP_"};

bool HasForwardedPrefix(const std::string& name) {
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](const char* prefix) { return name.rfind(prefix, 0) == 0; });
}

}  // namespace

std::vector<std::string> ForwardedVariables(const Environment& env,
                                            const std::vector<EnvVar>& overridden) {
  auto wanted = [&](const std::string& name) {
    return std::none_of(overridden.begin(), overridden.end(),
                        [&](const EnvVar& var) { return var.name == name; });
  };
  std::vector<std::string> names;
  for (const char* name : kNames) {
    if (env.count(name) && wanted(name)) names.push_back(name);
  }
  for (const auto& entry : env) {  // a std::map: already sorted by name
    if (HasForwardedPrefix(entry.first) && wanted(entry.first)) names.push_back(entry.first);
  }
  return names;
}

}  // namespace horde::launcher
