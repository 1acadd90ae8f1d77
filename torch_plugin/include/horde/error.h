#pragma once

#include <stdexcept>

#include "horde/status.h"

namespace horde {

// A failed horde operation, as a C++ exception carrying the Status. status().code() is
// kInvalidArgument for local misuse (raised at once, on the rank that made it),
// kPreconditionError when ranks disagree about an operation (raised on every rank) or
// it stalled past HORDE_STALL_SHUTDOWN_TIME_SECONDS (on the ranks that submitted it),
// kAborted when horde shut down before the operation ran.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(status);
}

}  // namespace horde
