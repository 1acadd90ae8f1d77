#include "topology/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace horde {
namespace {

struct Message {
  int from, to;
  double bytes;
};

// Seconds of a step whose messages all run at once: each message uses one link each
// way, so that its NIC is all the link's (k = 1 in the header's model), and the messages
// that leave (or enter) a rack share its uplink evenly.
double StepSeconds(const LinkMatrix& links, const std::vector<Message>& messages) {
  std::vector<int> leaving(links.racks(), 0), entering(links.racks(), 0);
  for (const Message& m : messages) {
    if (links.racks() == 0 || links.Rack(m.from) == links.Rack(m.to)) continue;
    ++leaving[links.Rack(m.from)];
    ++entering[links.Rack(m.to)];
  }
  double seconds = 0;
  for (const Message& m : messages) {
    double bandwidth = links.Link(m.from, m.to);
    for (int end : {m.from, m.to}) {
      if (links.Nic(end) > 0) bandwidth = std::min(bandwidth, links.Nic(end));
    }
    if (links.racks() > 0 && links.Rack(m.from) != links.Rack(m.to)) {
      bandwidth = std::min({bandwidth,
                            links.Uplink(links.Rack(m.from)) / leaving[links.Rack(m.from)],
                            links.Uplink(links.Rack(m.to)) / entering[links.Rack(m.to)]});
    }
    if (bandwidth <= 0) return HUGE_VAL;
    seconds = std::max(seconds, links.latency_seconds() + m.bytes / bandwidth);
  }
  return seconds;
}

// Every rank sends `bytes` to the next, at once.
double RingStepSeconds(const LinkMatrix& links, double bytes) {
  std::vector<Message> messages;
  for (int r = 0; r < links.size(); ++r) messages.push_back({r, (r + 1) % links.size(), bytes});
  return StepSeconds(links, messages);
}

// The slowest tree's pipeline: its share in chunks, each chunk taking one stage per link
// (latency + chunk / rate), and `depth` links from the first chunk's start to the last
// chunk's end besides the chunks themselves (2 Height for reduce and broadcast).
double SlowestTree(const LinkMatrix& links, const std::vector<SpanningTree>& trees, int64_t bytes,
                   int element_size, bool reduce) {
  if (trees.empty()) return HUGE_VAL;
  const std::vector<int64_t> shares = SplitByRate(trees, bytes / element_size);
  const double latency = links.latency_seconds();
  double slowest = 0;
  for (size_t t = 0; t < trees.size(); ++t) {
    if (shares[t] == 0) continue;
    if (trees[t].rate <= 0) return HUGE_VAL;
    const int64_t chunk = ChunkElements(shares[t], element_size, trees[t], latency);
    const double chunks = std::ceil(static_cast<double>(shares[t]) / chunk);
    const double stage = latency + static_cast<double>(chunk * element_size) / trees[t].rate;
    const int depth = (reduce ? 2 : 1) * trees[t].Height();
    slowest = std::max(slowest, (chunks + depth - 1) * stage);
  }
  return slowest;
}

}  // namespace

double RingAllreduceSeconds(const LinkMatrix& links, int64_t bytes) {
  const int n = links.size();
  if (n < 2) return 0;
  return 2 * (n - 1) * RingStepSeconds(links, static_cast<double>(bytes) / n);
}

double RecursiveDoublingAllreduceSeconds(const LinkMatrix& links, int64_t bytes) {
  const int n = links.size();
  if (n < 2) return 0;
  int p = 1;
  while (2 * p <= n) p *= 2;
  const int extra = n - p;
  std::vector<Message> fold, unfold;
  for (int i = 0; i < extra; ++i) {
    fold.push_back({2 * i, 2 * i + 1, static_cast<double>(bytes)});
    unfold.push_back({2 * i + 1, 2 * i, static_cast<double>(bytes)});
  }
  // The ranks left after folding: the odd ones of the folded pairs, then the rest.
  auto rank_of = [extra](int j) { return j < extra ? 2 * j + 1 : j + extra; };
  double halving = 0;
  double piece = static_cast<double>(bytes);
  for (int mask = 1; mask < p; mask *= 2) {
    piece /= 2;
    std::vector<Message> exchange;
    for (int j = 0; j < p; ++j) exchange.push_back({rank_of(j), rank_of(j ^ mask), piece});
    halving += StepSeconds(links, exchange);
  }
  // The allgather's doubling steps mirror the halving ones, pair for pair.
  return StepSeconds(links, fold) + 2 * halving + StepSeconds(links, unfold);
}

double TreesAllreduceSeconds(const LinkMatrix& links, const std::vector<SpanningTree>& trees,
                             int64_t bytes, int element_size) {
  return SlowestTree(links, trees, bytes, element_size, /*reduce=*/true);
}

namespace {

// A binomial tree from `root`, as MPICH sends: the root to the farthest half first, then
// every holder halves again; `bytes(from, mask)` is what relative rank `from` sends to
// `from + mask`.
template <typename Bytes>
double BinomialSeconds(const LinkMatrix& links, int root, Bytes bytes) {
  const int n = links.size();
  double seconds = 0;
  int top = 1;
  while (top < n) top *= 2;
  for (int mask = top / 2; mask >= 1; mask /= 2) {
    std::vector<Message> step;
    for (int from = 0; from + mask < n; from += 2 * mask) {
      step.push_back({(from + root) % n, (from + mask + root) % n, bytes(from, mask)});
    }
    seconds += StepSeconds(links, step);
  }
  return seconds;
}

}  // namespace

double BinomialBroadcastSeconds(const LinkMatrix& links, int64_t bytes, int root) {
  return BinomialSeconds(links, root, [&](int, int) { return static_cast<double>(bytes); });
}

double ScatterAllgatherBroadcastSeconds(const LinkMatrix& links, int64_t bytes, int root) {
  const int n = links.size();
  if (n < 2) return 0;
  const double piece = static_cast<double>(bytes) / n;
  // The scatter: each holder sends the far half of the pieces it holds.
  const double scatter = BinomialSeconds(links, root, [&](int from, int mask) {
    return (std::min(from + 2 * mask, n) - (from + mask)) * piece;
  });
  // The ring allgather: n - 1 steps of one piece to the next rank.
  return scatter + (n - 1) * RingStepSeconds(links, piece);
}

double TreesBroadcastSeconds(const LinkMatrix& links, const std::vector<SpanningTree>& trees,
                             int64_t bytes, int element_size) {
  return SlowestTree(links, trees, bytes, element_size, /*reduce=*/false);
}

std::vector<int64_t> SplitByRate(const std::vector<SpanningTree>& trees, int64_t count) {
  const size_t k = trees.size();
  std::vector<int64_t> shares(k, 0);
  if (k == 0) return shares;
  double total = 0;
  for (const SpanningTree& tree : trees) total += std::max(tree.rate, 0.0);
  std::vector<double> remainder(k);
  int64_t assigned = 0;
  for (size_t t = 0; t < k; ++t) {
    // Rates that are all 0 split evenly.
    const double weight = total > 0 ? std::max(trees[t].rate, 0.0) / total : 1.0 / k;
    const double ideal = static_cast<double>(count) * weight;
    shares[t] = std::min(count, static_cast<int64_t>(std::floor(ideal)));
    remainder[t] = ideal - static_cast<double>(shares[t]);
    assigned += shares[t];
  }
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  // Ties to the lower tree (std::sort with the index: stable_sort's temporary buffer trips
  // AddressSanitizer's alloc-dealloc check with GCC 12's libstdc++).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return remainder[a] != remainder[b] ? remainder[a] > remainder[b] : a < b;
  });
  // Rounding may have floored past count: take back from the smallest remainders.
  for (size_t i = k; assigned > count; i = i == 1 ? k : i - 1) {
    int64_t& share = shares[order[i - 1]];
    if (share == 0) continue;
    --share;
    --assigned;
  }
  for (size_t i = 0; assigned < count; i = (i + 1) % k) {
    ++shares[order[i]];
    ++assigned;
  }
  return shares;
}

int64_t ChunkElements(int64_t share_elements, int element_size, const SpanningTree& tree,
                      double latency_seconds) {
  // (chunks + depth) * (latency + chunk / rate) is least at chunk = sqrt(share * latency *
  // rate / depth): more chunks pay more latencies, bigger ones a longer fill. Depth is
  // taken as 2 Height, the reduce's; the broadcast's optimum is within a factor of 1.4.
  const double share = static_cast<double>(share_elements) * element_size;
  const double depth = std::max(1, 2 * tree.Height());
  const double best = std::sqrt(share * latency_seconds * std::max(tree.rate, 0.0) / depth);
  const int64_t bytes = std::clamp<int64_t>(static_cast<int64_t>(best), kMinChunkBytes,
                                            kMaxChunkBytes);
  return std::max<int64_t>(1, std::min(share_elements, bytes / element_size));
}

}  // namespace horde
