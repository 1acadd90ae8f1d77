// How negotiation cost grows with ranks: N ranks simulated on N threads
// over the unit tests' in-memory transport (tests/cpp/fake_transport.h), each with its own
// Negotiator. For a first step of new tensors (every name through the coordinator) and
// for cached steps (the same names again: one AND-allreduce), it prints per round the
// payload bytes a non-coordinator and the coordinator hand the network, and the CPU time
// (per-thread clocks) each spends in negotiation, the in-memory transport's excluded.
//
// Usage: negotiation_scaling TENSORS [RANKS...]
//   TENSORS: one tensor a line, "name dim dim ..." (float32); bench/run.sh writes
//   ResNet-50's 161 gradients. RANKS: the rank counts, default 2 8 64 256 1024.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/native/counting_transport.h"
#include "core/negotiator.h"
#include "tests/cpp/fake_transport.h"

namespace horde {
namespace bench {
namespace {

// Fresh simulations per rank count, and cached steps in each; the figures are medians.
constexpr int kRepeats = 3;
constexpr int kCachedSteps = 5;
// A phase on 1,024 threads sharing two busy cores can take many seconds to assemble.
constexpr std::chrono::minutes kPhaseTimeout(5);

struct Failure {
  std::string what;
};

std::vector<Request> ReadTensors(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure{"cannot read the tensor list '" + path + "'"};
  std::vector<Request> requests;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    Request request;
    if (!(fields >> request.name)) continue;
    int64_t dim = 0;
    bool negative = false;
    while (fields >> dim) {
      negative = negative || dim < 0;
      request.shape.push_back(dim);
    }
    if (!fields.eof() || request.shape.empty() || negative) {
      throw Failure{path + ":" + std::to_string(number) + ": expected 'name dim dim ...' " +
                    "with non-negative integer dimensions, got '" + line + "'"};
    }
    requests.push_back(std::move(request));
  }
  if (requests.empty()) throw Failure{"the tensor list '" + path + "' names no tensor"};
  return requests;
}

// One rank's part of one round.
struct RankRound {
  Status status;
  size_t names_decided = 0;
  int64_t cpu_ns = 0;  // the whole RunRound, transport included
  CountingTransport::Counts counts;
};

// One round's figures: the coordinator's, and the median non-coordinator's.
struct Figures {
  int64_t and_words = 0;
  int64_t worker_sent = 0;
  int64_t coordinator_received = 0;
  int64_t coordinator_sent = 0;
  double coordinator_cpu_us = 0;  // negotiation only
  double worker_cpu_us = 0;       // negotiation only, median over ranks 1..N-1
  double coordinator_transport_cpu_us = 0;
};

double NegotiationMicroseconds(const RankRound& r) {
  return static_cast<double>(r.cpu_ns - r.counts.cpu_ns) / 1000.0;
}

double Median(std::vector<double> values) {
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

Figures Summarize(const std::vector<RankRound>& ranks) {
  const CountingTransport::Counts& coordinator = ranks[0].counts;
  Figures f;
  f.and_words = coordinator.and_words;
  f.worker_sent = ranks[1].counts.gather_sent + 8 * ranks[1].counts.and_words;
  f.coordinator_received = coordinator.gather_received;
  f.coordinator_sent = coordinator.broadcast_sent + 8 * coordinator.and_words;
  f.coordinator_cpu_us = NegotiationMicroseconds(ranks[0]);
  f.coordinator_transport_cpu_us = static_cast<double>(coordinator.cpu_ns) / 1000.0;
  std::vector<double> workers;
  for (size_t r = 1; r < ranks.size(); ++r) workers.push_back(NegotiationMicroseconds(ranks[r]));
  f.worker_cpu_us = Median(std::move(workers));
  return f;
}

// N ranks, each a Negotiator over a counting wrapper of the in-memory transport.
class Simulation {
 public:
  explicit Simulation(int size) : hub_(std::make_shared<testing::FakeHub>(size, kPhaseTimeout)) {
    for (int rank = 0; rank < size; ++rank) {
      fakes_.push_back(std::make_unique<testing::FakeTransport>(hub_, rank));
      counting_.push_back(std::make_unique<CountingTransport>(fakes_.back().get()));
      negotiators_.push_back(
          std::make_unique<Negotiator>(counting_.back().get(), NegotiationSettings()));
    }
  }

  // Every rank submits `requests`, which must all be decided this round.
  Figures Round(const std::vector<Request>& requests) {
    const int size = hub_->size();
    std::vector<RankRound> ranks(size);
    testing::RunOnRanks(size, [&](int rank) { RunRank(rank, requests, &ranks[rank]); });
    for (int rank = 0; rank < size; ++rank) {
      if (!ranks[rank].status.ok()) {
        throw Failure{"rank " + std::to_string(rank) + " of " + std::to_string(size) + ": " +
                      ranks[rank].status.message()};
      }
      if (ranks[rank].names_decided != requests.size()) {
        throw Failure{"rank " + std::to_string(rank) + " of " + std::to_string(size) + " decided " +
                      std::to_string(ranks[rank].names_decided) + " of " +
                      std::to_string(requests.size()) + " tensors in one round"};
      }
    }
    return Summarize(ranks);
  }

 private:
  void RunRank(int rank, const std::vector<Request>& requests, RankRound* out) {
    RequestList mine;
    mine.requests = requests;
    for (Request& r : mine.requests) r.rank = rank;
    ResponseList decided;
    counting_[rank]->Reset();
    const int64_t start = ThreadCpuNanoseconds();
    out->status = negotiators_[rank]->RunRound(&mine, &decided);
    out->cpu_ns = ThreadCpuNanoseconds() - start;
    out->counts = counting_[rank]->counts();
    for (const Response& response : decided.responses) {
      if (response.kind == Response::Kind::kCollective) out->names_decided += response.names.size();
    }
  }

  std::shared_ptr<testing::FakeHub> hub_;
  std::vector<std::unique_ptr<testing::FakeTransport>> fakes_;
  std::vector<std::unique_ptr<CountingTransport>> counting_;
  std::vector<std::unique_ptr<Negotiator>> negotiators_;
};

// The median of each figure over `steps`.
Figures MedianOf(const std::vector<Figures>& steps) {
  auto median = [&](auto field) {
    std::vector<double> values;
    for (const Figures& f : steps) values.push_back(static_cast<double>(f.*field));
    return Median(std::move(values));
  };
  Figures f;
  f.and_words = static_cast<int64_t>(median(&Figures::and_words));
  f.worker_sent = static_cast<int64_t>(median(&Figures::worker_sent));
  f.coordinator_received = static_cast<int64_t>(median(&Figures::coordinator_received));
  f.coordinator_sent = static_cast<int64_t>(median(&Figures::coordinator_sent));
  f.coordinator_cpu_us = median(&Figures::coordinator_cpu_us);
  f.worker_cpu_us = median(&Figures::worker_cpu_us);
  f.coordinator_transport_cpu_us = median(&Figures::coordinator_transport_cpu_us);
  return f;
}

double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void PrintRow(int size, const char* step, const Figures& f) {
  std::printf("| %d | %s | %lld | %lld | %lld | %lld | %.1f | %.1f | %.1f |\n", size, step,
              static_cast<long long>(f.and_words), static_cast<long long>(f.worker_sent),
              static_cast<long long>(f.coordinator_received),
              static_cast<long long>(f.coordinator_sent), f.coordinator_cpu_us, f.worker_cpu_us,
              f.coordinator_transport_cpu_us);
  std::fflush(stdout);
}

void Measure(int size, const std::vector<Request>& requests) {
  const double cpu_before = ProcessCpuSeconds();
  std::vector<Figures> first, cached;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    Simulation simulation(size);
    first.push_back(simulation.Round(requests));
    for (int step = 0; step < kCachedSteps; ++step) cached.push_back(simulation.Round(requests));
  }
  PrintRow(size, "first", MedianOf(first));
  PrintRow(size, "cached", MedianOf(cached));
  std::fprintf(stderr, "negotiation_scaling: %d ranks: %.1f s of process CPU\n", size,
               ProcessCpuSeconds() - cpu_before);
}

std::vector<int> ParseRanks(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) {
    char* end = nullptr;
    const long n = std::strtol(argv[i], &end, 10);
    if (*end != '\0' || n < 2 || n > 65536) {
      throw Failure{std::string("rank count '") + argv[i] + "': expected an integer 2..65536"};
    }
    sizes.push_back(static_cast<int>(n));
  }
  if (sizes.empty()) sizes = {2, 8, 64, 256, 1024};
  return sizes;
}

int Main(int argc, char** argv) {
  if (argc < 2) throw Failure{"usage: negotiation_scaling TENSORS [RANKS...]"};
  const std::vector<Request> requests = ReadTensors(argv[1]);
  const std::vector<int> sizes = ParseRanks(argc, argv);
  std::printf(
      "%zu tensors, %d fresh simulations per rank count. first: the first step (one round, "
      "every tensor new), median of %d; cached: a step that hits the cache, median of %d. "
      "Bytes: payload per round (AND words x 8 included). CPU: per-thread clock, microseconds, "
      "negotiation only (the in-memory transport's CPU excluded; rank 0's is the last "
      "column)\n\n",
      requests.size(), kRepeats, kRepeats, kRepeats * kCachedSteps);
  std::printf(
      "| ranks | step | AND words | rank>0 sends (B) | rank 0 receives (B) | rank 0 sends (B) | "
      "rank 0 CPU (us) | rank>0 CPU (us) | rank 0 in fake transport (us) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int size : sizes) Measure(size, requests);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace horde

int main(int argc, char** argv) {
  try {
    return horde::bench::Main(argc, argv);
  } catch (const horde::bench::Failure& failure) {
    std::cerr << "negotiation_scaling: " << failure.what << "\n";
    return 1;
  }
}
