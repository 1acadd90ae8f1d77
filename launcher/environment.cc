#include "launcher/environment.h"

extern char** environ;

namespace horde::launcher {

Environment CurrentEnvironment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

std::vector<std::string> ToEnvStrings(const Environment& env) {
  std::vector<std::string> strings;
  for (const auto& [name, value] : env) strings.push_back(name + "=" + value);
  return strings;
}

}  // namespace horde::launcher
