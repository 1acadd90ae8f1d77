#pragma once

#include <stdexcept>

namespace horde::launcher {

// Bad input from the user: main() prints the message as one line on stderr and exits
// with code 2 before anything is launched. The message names the problem and the fix.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace horde::launcher
