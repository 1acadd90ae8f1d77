#pragma once

#include <map>
#include <string>
#include <vector>

namespace horde::launcher {

// A snapshot of environment variables. Functions take it as a value rather than
// reading getenv(), so tests can hand them any environment.
using Environment = std::map<std::string, std::string>;

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar& other) const { return name == other.name && value == other.value; }
};

Environment CurrentEnvironment();

// NAME=value strings for execve().
std::vector<std::string> ToEnvStrings(const Environment& env);

}  // namespace horde::launcher
