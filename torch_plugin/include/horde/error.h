#pragma once

#include <stdexcept>

#include "core/status.h"

namespace horde {

// A failed horde operation, as a C++ exception carrying the Status.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(status);
}

}  // namespace horde
