#include "core/round_pacer.h"

#include <algorithm>

namespace horde {

RoundPacer::Duration RoundPacer::Next(bool progressed, bool undecided) {
  last_progressed_ = progressed;
  if (undecided) {
    idle_wait_ = cycle_time_;
    busy_wait_ = progressed ? kFirstBusyWait : std::min(busy_wait_ * 2, cycle_time_);
    return std::min(busy_wait_, cycle_time_);
  }
  busy_wait_ = kFirstBusyWait;
  idle_wait_ = progressed ? cycle_time_
                          : std::min(idle_wait_ * 2, std::max(longest_idle_, cycle_time_));
  return idle_wait_;
}

}  // namespace horde
