#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace horde {

// Names operations submitted without one: "<kind>.noname.<n>", n counting this runtime's
// unnamed operations of that kind in the current numbering epoch (core/numbering_epochs.h),
// with ".e<epoch>" appended after the first epoch, so that ranks submitting them in the
// same order agree. Thread-safe.
class UnnamedNumbering {
 public:
  // The next name for an unnamed operation of `kind`, and the epoch it is numbered in.
  std::string Next(const std::string& kind, int32_t* epoch);
  // Numbers from 0 again, under names no earlier epoch used.
  void StartEpoch();
  int32_t epoch() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counts_;  // per kind of operation, this epoch
  int32_t epoch_ = 0;
};

}  // namespace horde
