#include "core/build_identity.h"

#include <unistd.h>

#include "core/wire_codec.h"

namespace horde {
namespace {

constexpr char kPrefix[] = "build\t";

}  // namespace

BuildIdentity BuildIdentity::Current(std::string gpu_path) {
  BuildIdentity build;
  build.version = HORDE_VERSION;
  build.wire_format = kWireFormat;
  build.gpu_path = std::move(gpu_path);
  char name[256] = {};
  build.host = gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown host";
  return build;
}

std::string BuildIdentity::Summary() const {
  return "horde " + version + ", wire format " + std::to_string(wire_format) + ", GPU path " +
         gpu_path;
}

std::string BuildIdentity::Encode() const {
  return kPrefix + version + "\t" + std::to_string(wire_format) + "\t" + gpu_path + "\t" + host;
}

bool BuildIdentity::Parse(const std::string& line, BuildIdentity* out) {
  const std::string prefix = kPrefix;
  if (line.compare(0, prefix.size(), prefix) != 0) return false;
  std::string fields[4];
  size_t start = prefix.size();
  for (int i = 0; i < 4; ++i) {
    const size_t tab = i < 3 ? line.find('\t', start) : line.size();
    if (tab == std::string::npos) return false;
    fields[i] = line.substr(start, tab - start);
    start = tab + 1;
  }
  if (fields[1].empty() || fields[1].find_first_not_of("0123456789") != std::string::npos ||
      fields[1].size() > 6) {
    return false;
  }
  *out = BuildIdentity{fields[0], std::stoi(fields[1]), fields[2], fields[3]};
  return true;
}

}  // namespace horde
