#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace horde {

// Which rank the others wait for. In every round that executes collectives, each rank
// measures how long it waited: from its last submission of what the round executed to
// the moment the round settled, one all ranks share (the end of its first collective).
// The rank that arrived last waited least (the protocol's and the collective's time
// alone); every other rank waited for it. Rank 0 compares the ranks' waits round by
// round over a window (see StragglerWindow) and says who was last, how often, by how
// much, and what that cost the others.
struct StragglerReport {
  int straggler = -1;        // the rank, or -1: no rank both is last most of the time and costs
                             // the others enough (see kStragglerShare, kStragglerCost)
  int most_often_last = -1;  // the rank last in most rounds, straggler or not; -1: no rounds
  std::string host;          // most_often_last's host
  double share_last = 0;     // of the window's rounds, those in which it was last
  double lag_median_ms = 0;  // how much later than the next rank it arrived, in those rounds
  double lag_p90_ms = 0;
  double cost_to_others = 0;  // the others' mean share of the window spent waiting for it
  int64_t rounds = 0;         // rounds compared
  double window_seconds = 0;  // the window's length on rank 0's clock
};

// A rank is called the straggler when it is last in more than this share of the rounds
// and the others wait for it more than kStragglerCost of their time.
constexpr double kStragglerShare = 0.5;
constexpr double kStragglerCost = 0.05;
// Closer arrivals than this are a tie (nobody was last): scheduling noise, not a straggler.
constexpr double kTieSeconds = 100e-6;

// One rank's waits since the last exchange. Background thread only.
class StragglerWindow {
 public:
  // Rounds per exchange: every rank counts the same rounds, so all exchange together.
  static constexpr int kRounds = 64;

  // A round that executed collectives; `wait_seconds` < 0: this rank took part in none
  // of them with a tensor of its own (a joined rank).
  void AddRound(double wait_seconds, double now_seconds);
  bool full() const { return static_cast<int>(waits_.size()) >= kRounds; }
  // The window as this rank sends it (its host, the window's length, each round's wait
  // and the moment it settled), and empties it.
  std::string TakeEncoded(const std::string& host);

 private:
  std::vector<double> waits_;
  std::vector<double> settled_;  // when each round settled (now_seconds)
  double started_seconds_ = -1;
  double last_seconds_ = 0;
};

// Rank 0's reading of every rank's TakeEncoded() (in rank order); an empty report if
// they do not parse or count different rounds.
StragglerReport AnalyzeWaits(const std::vector<std::string>& encoded_by_rank);

// The report as rank 0 broadcasts it, and back.
std::string EncodeReport(const StragglerReport& report);
bool DecodeReport(const std::string& text, StragglerReport* report);

// The report as a JSON object (the timeline's STRAGGLER_REPORT event), with the fields
// of StragglerReport; "straggler" and "most_often_last" are null when -1.
std::string StragglerReportJson(const StragglerReport& report);

// One line for the log, e.g. "rank 1 (host a) arrived last in 97% of the last 64 rounds,
// by 20.1 ms (median; p90 21.0 ms): the other ranks spent 45% of their time waiting for
// it".
std::string DescribeStraggler(const StragglerReport& report);

}  // namespace horde
