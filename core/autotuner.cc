#include "core/autotuner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace horde {
namespace {

constexpr int kBitsPerDimension = 8;
constexpr uint64_t kSettledBit = uint64_t{1} << 62;

template <typename T>
std::vector<T> WithAlternatives(T configured, std::vector<T> alternatives) {
  std::vector<T> values = {configured};
  for (const T& v : alternatives) {
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  return values;
}

}  // namespace

Autotuner::Autotuner(const TunableParameters& initial, double seconds_per_sample)
    : thresholds_(WithAlternatives<int64_t>(initial.fusion_threshold_bytes,
                                            {1 << 20, 8 << 20, 32 << 20, 128 << 20})),
      cycle_times_(WithAlternatives<double>(initial.cycle_time_ms, {0.5, 2.0, 5.0})),
      cache_options_(initial.cache_enabled ? std::vector<bool>{true, false}
                                           : std::vector<bool>{false}),
      sample_length_(seconds_per_sample),
      best_index_(3, 0) {
  current_ = Encode(best_index_);
}

Status Autotuner::OpenLog(const std::string& path) {
  log_.open(path, std::ios::trunc);
  if (!log_) {
    return Status::InvalidArgument("cannot open the autotune log '" + path +
                                   "': " + std::strerror(errno));
  }
  log_ << "sample,fusion_threshold_bytes,cycle_time_ms,cache_enabled,bytes_per_second,state\n";
  log_.flush();
  return Status::Ok();
}

uint64_t Autotuner::Encode(const std::vector<size_t>& index) const {
  uint64_t packed = 0;
  for (size_t d = 0; d < index.size(); ++d) packed |= uint64_t{index[d]} << (d * kBitsPerDimension);
  return packed;
}

TunableParameters Autotuner::Decode(uint64_t choice) const {
  auto index = [&](size_t d) { return (choice >> (d * kBitsPerDimension)) & 0xff; };
  TunableParameters p;
  p.fusion_threshold_bytes = thresholds_[std::min<size_t>(index(0), thresholds_.size() - 1)];
  p.cycle_time_ms = cycle_times_[std::min<size_t>(index(1), cycle_times_.size() - 1)];
  p.cache_enabled = cache_options_[std::min<size_t>(index(2), cache_options_.size() - 1)];
  return p;
}

bool Autotuner::IsSettled(uint64_t choice) { return choice & kSettledBit; }

void Autotuner::Record(int64_t bytes, Clock::time_point now) {
  if (settled_) return;
  if (!sample_started_) {
    sample_started_ = true;
    sample_start_ = now;
    sample_bytes_ = 0;
    return;
  }
  sample_bytes_ += bytes;
  const std::chrono::duration<double> elapsed = now - sample_start_;
  // A window in which nothing was reduced (the application was busy elsewhere) measured
  // nothing: it goes on until some bytes arrive, rather than scoring the candidate zero.
  if (elapsed < sample_length_ || sample_bytes_ == 0) return;
  if (!warming_up_) FinishSample(static_cast<double>(sample_bytes_) / elapsed.count());
  warming_up_ = !warming_up_;
  sample_start_ = now;
  sample_bytes_ = 0;
}

void Autotuner::FinishSample(double bytes_per_second) {
  const TunableParameters tried = Decode(current_);
  if (bytes_per_second > best_score_) {
    best_score_ = bytes_per_second;
    best_index_[dimension_] = candidate_;
  }
  MoveToNextCandidate();
  if (log_) {
    log_ << ++samples_ << "," << tried.fusion_threshold_bytes << "," << tried.cycle_time_ms << ","
         << (tried.cache_enabled ? 1 : 0) << "," << static_cast<int64_t>(bytes_per_second) << ","
         << (settled_ ? "settled" : "searching") << "\n";
    log_.flush();
  }
}

void Autotuner::MoveToNextCandidate() {
  const size_t sizes[] = {thresholds_.size(), cycle_times_.size(), cache_options_.size()};
  ++candidate_;
  while (dimension_ < 3 && candidate_ >= sizes[dimension_]) {
    ++dimension_;
    candidate_ = 0;
    best_score_ = -1;
  }
  if (dimension_ == 3) {
    settled_ = true;
    current_ = Encode(best_index_) | kSettledBit;
    return;
  }
  std::vector<size_t> next = best_index_;
  next[dimension_] = candidate_;
  current_ = Encode(next);
}

}  // namespace horde
