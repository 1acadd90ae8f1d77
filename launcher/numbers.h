#pragma once

#include <optional>
#include <string>

namespace horde::launcher {

// Digits only (no sign, no spaces) and at most `max`; nullopt otherwise.
std::optional<long long> ParseNonNegativeInteger(const std::string& text, long long max);

// A finite number above zero ("0.5", "2", "1e-3"); nullopt otherwise.
std::optional<double> ParsePositiveNumber(const std::string& text);

}  // namespace horde::launcher
