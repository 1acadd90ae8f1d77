#pragma once

#include <chrono>
#include <thread>

namespace horde {
namespace mpi {

// How a loop that polls non-blocking MPI requests waits when a pass moved nothing. Each
// MPI_Test moves data, so the loop keeps polling, yielding the core between passes;
// once nothing has moved for kSpinBeforeSleep it sleeps kSleep between passes, giving
// the core to ranks that share it (and to the kernel's TCP work). The stretch is time,
// not passes: a sleep costs about 100 us with the kernel's timer slack, longer than a
// fast link (shared memory, 100 Gb/s) takes for a chunk, so the loop sleeps only once
// a wait has already been long against it.
class IdleBackoff {
 public:
  static constexpr std::chrono::microseconds kSpinBeforeSleep{500};
  static constexpr std::chrono::microseconds kSleep{50};

  // After each pass; `moved`: something completed in it.
  void Pass(bool moved) {
    const auto now = std::chrono::steady_clock::now();
    if (moved || !idle_) {
      idle_ = !moved;
      idle_since_ = now;
      if (moved) return;
    }
    if (now - idle_since_ >= kSpinBeforeSleep) {
      std::this_thread::sleep_for(kSleep);
    } else {
      std::this_thread::yield();
    }
  }

 private:
  bool idle_ = false;
  std::chrono::steady_clock::time_point idle_since_;
};

}  // namespace mpi
}  // namespace horde
