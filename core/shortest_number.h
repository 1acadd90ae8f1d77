#pragma once

#include <string>

namespace horde {

// The shortest decimal text that reads back as `v` ("1", "0.5", "0.1"), so that two values
// that differ never print alike in a message.
std::string ShortestNumber(double v);

}  // namespace horde
