#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "core/straggler_report.h"
#include "core/transport.h"
#include "horde/status.h"

namespace horde {

// A runtime's straggler report, kept up to date from the rounds it runs: after every
// StragglerWindow::kRounds rounds that executed collectives, the ranks send their waits
// to rank 0, which analyzes them (core/straggler_report.h) and broadcasts the report.
// Rank 0 also logs it (info level, at most once a minute) when a rank is the straggler
// and `log` is on (HORDE_STRAGGLER_REPORT). Costs one small gather and broadcast per
// window. EndRound on the background thread; report() from any thread.
class StragglerWatch {
 public:
  using Clock = std::chrono::steady_clock;

  StragglerWatch(int rank, bool log);

  // A round that executed collectives; `settled`: a moment all ranks share, the end of
  // the round's first collective (ranks leave one within a message's latency of each
  // other; the moment a rank hears the decision would not do: rank 0 decides, the others
  // hear it later, and on a busy host much later, which made rank 0 look last).
  // `latest_submission`: the latest of this rank's submissions among them (the clock's
  // epoch: none of its own, a joined rank). Collective over `transport` once the window
  // is full, which every rank reaches in the same round; `*reported` says whether it
  // made a new report.
  Status EndRound(Clock::time_point latest_submission, Clock::time_point settled,
                  Transport* transport, bool* reported);

  // The last window's report; an empty one (rounds 0) before the first.
  StragglerReport report() const;

 private:
  Status Exchange(Transport* transport);

  const int rank_;
  const bool log_;
  const std::string host_;
  const Clock::time_point start_ = Clock::now();
  StragglerWindow window_;
  Clock::time_point last_logged_{};
  mutable std::mutex mu_;
  StragglerReport report_;
};

}  // namespace horde
