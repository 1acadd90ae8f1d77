#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/transport.h"

namespace horde {
namespace bench {

// This thread's CPU time: what it ran, not what it waited (clock_gettime's per-thread
// clock), so the figures hold on a loaded machine.
inline int64_t ThreadCpuNanoseconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

// Forwards to another transport and counts, for its rank, the payload bytes handed to
// each collective and the CPU time its thread spends inside them, so that the CPU of an
// in-memory transport can be told apart from the negotiator's own.
class CountingTransport : public Transport {
 public:
  struct Counts {
    int64_t gather_sent = 0;      // this rank's blob, sent to the coordinator
    int64_t gather_received = 0;  // the other ranks' blobs (coordinator only)
    int64_t broadcast_sent = 0;   // the coordinator's decision
    int64_t and_words = 0;        // 64-bit words in the AND-allreduce
    int64_t cpu_ns = 0;           // inside the transport's calls
  };

  explicit CountingTransport(Transport* inner) : inner_(inner) {}

  const Counts& counts() const { return counts_; }
  void Reset() { counts_ = Counts(); }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  Status GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) override {
    const int64_t start = ThreadCpuNanoseconds();
    Status s = inner_->GatherToCoordinator(mine, all);
    if (rank() != 0) counts_.gather_sent += static_cast<int64_t>(mine.size());
    for (size_t r = 1; r < all->size(); ++r) {
      counts_.gather_received += static_cast<int64_t>((*all)[r].size());
    }
    counts_.cpu_ns += ThreadCpuNanoseconds() - start;
    return s;
  }

  Status BroadcastFromCoordinator(std::string* blob) override {
    const int64_t start = ThreadCpuNanoseconds();
    if (rank() == 0) counts_.broadcast_sent += static_cast<int64_t>(blob->size());
    Status s = inner_->BroadcastFromCoordinator(blob);
    counts_.cpu_ns += ThreadCpuNanoseconds() - start;
    return s;
  }

  Status AllreduceAnd(std::vector<uint64_t>* words) override {
    const int64_t start = ThreadCpuNanoseconds();
    counts_.and_words += static_cast<int64_t>(words->size());
    Status s = inner_->AllreduceAnd(words);
    counts_.cpu_ns += ThreadCpuNanoseconds() - start;
    return s;
  }

 private:
  Transport* inner_;
  Counts counts_;
};

}  // namespace bench
}  // namespace horde
