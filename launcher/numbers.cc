#include "launcher/numbers.h"

#include <cmath>
#include <cstdlib>

namespace horde::launcher {

std::optional<long long> ParseNonNegativeInteger(const std::string& text, long long max) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  long long value = std::stoll(text);
  if (value > max) return std::nullopt;
  return value;
}

std::optional<double> ParsePositiveNumber(const std::string& text) {
  // strtod also takes leading spaces, "inf" and hex; a plain decimal is what users mean.
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
    return std::nullopt;
  }
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value) || value <= 0) return std::nullopt;
  return value;
}

}  // namespace horde::launcher
