#pragma once

#include <chrono>

namespace horde {

// How long the background loop waits before its next round when no new work is queued
// (queued work always starts a round at once; the wait is cut short by it).
//
// Rounds are collective, so a rank that waits delays the others' rounds, and a rank that
// never waits burns a core that training needs. So: with this rank's operations still
// undecided (other ranks have not submitted them yet), the wait starts short and backs
// off to the cycle time while rounds make no progress; with nothing pending, it starts
// at the cycle time and backs off to `longest_idle`, so an idle runtime costs nothing.
class RoundPacer {
 public:
  using Duration = std::chrono::microseconds;
  static constexpr Duration kFirstBusyWait{50};
  static constexpr Duration kLongestIdleWait{50000};
  // After a round that made progress, how long to poll for new work before sleeping.
  static constexpr Duration kSpinAfterProgress{50};

  explicit RoundPacer(Duration cycle_time, Duration longest_idle = kLongestIdleWait)
      : cycle_time_(cycle_time), longest_idle_(longest_idle), idle_wait_(cycle_time) {}

  // `progressed`: the last round submitted or completed operations of this rank;
  // `undecided`: this rank has operations waiting for other ranks.
  Duration Next(bool progressed, bool undecided);
  // How much of the next wait to spend polling (see TensorQueue::WaitForWork).
  Duration spin() const { return last_progressed_ ? kSpinAfterProgress : Duration(0); }

  void set_cycle_time(Duration cycle_time) { cycle_time_ = cycle_time; }

 private:
  Duration cycle_time_;
  Duration longest_idle_;
  Duration busy_wait_{kFirstBusyWait};
  Duration idle_wait_;
  bool last_progressed_ = false;
};

}  // namespace horde
