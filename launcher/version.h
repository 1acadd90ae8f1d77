#pragma once

namespace horde::launcher {

// The project's version, from CMake's project() (HORDE_VERSION).
inline constexpr const char* kVersion = HORDE_VERSION;

}  // namespace horde::launcher
