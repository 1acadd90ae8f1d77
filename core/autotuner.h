#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "horde/status.h"

namespace horde {

// What autotuning may change between rounds, identically on every rank.
struct TunableParameters {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  bool cache_enabled = true;

  bool operator==(const TunableParameters& o) const {
    return fusion_threshold_bytes == o.fusion_threshold_bytes && cycle_time_ms == o.cycle_time_ms &&
           cache_enabled == o.cache_enabled;
  }
};

// Rank 0's online search for the parameters that reduce the most bytes per second
// (HORDE_AUTOTUNE=1). It tries one parameter at a time over a few candidates (fusion
// threshold, then cycle time, then the response cache on or off), keeping the best
// value of each, then settles on the best set seen. Each sample spans at least
// `seconds_per_sample` of rounds and lasts until it has seen some bytes, after one
// warm-up sample that lets the change take effect. Every sample is appended to the CSV log, if one
// is given.
//
// Only rank 0 measures; it sends its choice as a number (see choice()) in the round's
// bit allreduce, so every rank applies the same parameters after the same round.
class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;

  Autotuner(const TunableParameters& initial, double seconds_per_sample);

  // Opens the CSV log (truncating it) and writes its header.
  Status OpenLog(const std::string& path);

  // Called by rank 0 after each round with the bytes that round reduced.
  void Record(int64_t bytes, Clock::time_point now);

  bool settled() const { return settled_; }
  // The parameters to use now, as a number every rank can decode.
  uint64_t choice() const { return current_; }
  TunableParameters Decode(uint64_t choice) const;
  static bool IsSettled(uint64_t choice);

 private:
  // A candidate set: an index per dimension, packed as choice().
  uint64_t Encode(const std::vector<size_t>& index) const;
  void FinishSample(double bytes_per_second);
  void MoveToNextCandidate();

  std::vector<int64_t> thresholds_;
  std::vector<double> cycle_times_;
  std::vector<bool> cache_options_;
  const std::chrono::duration<double> sample_length_;

  std::vector<size_t> best_index_;  // per dimension, the best value found so far
  double best_score_ = -1;
  size_t dimension_ = 0;  // the dimension being searched
  size_t candidate_ = 0;  // its value being sampled
  uint64_t current_ = 0;
  bool warming_up_ = true;
  bool settled_ = false;
  int64_t sample_bytes_ = 0;
  Clock::time_point sample_start_{};
  bool sample_started_ = false;
  int64_t samples_ = 0;
  std::ofstream log_;
};

}  // namespace horde
