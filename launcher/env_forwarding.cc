#include "launcher/env_forwarding.h"

#include <algorithm>
#include <cctype>

#include "launcher/host_name.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

const char* const kNames[] = {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV"};
const char* const kPrefixes[] = {"HORDE_", "HOROVOD_", "NCCL_", "OMP_"};

bool IsIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void CheckForwardable(const std::string& name, const std::string& value) {
  if (!IsIdentifier(name)) {
    throw UsageError("cannot forward the environment variable " + QuotedForMessage(name) +
                     " to the ranks: its name is not made of letters, digits and '_'; unset it");
  }
  if (value.find_first_of("\n\r") != std::string::npos) {
    throw UsageError("cannot forward " + name + " to the ranks: its value holds a line break (" +
                     QuotedForMessage(value) + "); remove it");
  }
}

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
  for (const std::string& name : names) CheckForwardable(name, env.at(name));
  return names;
}

}  // namespace horde::launcher
