#pragma once

#include <cstdint>
#include <vector>

#include "topology/link_matrix.h"
#include "topology/spanning_tree.h"

namespace horde {

// Predicted seconds of collectives over `links`, so that the choice between algorithms
// (topology/topology_plan.h) is made by predicted time. The alpha-beta model: a message over
// a link costs the matrix's latency plus bytes / bandwidth, where a link's usable
// bandwidth, when each end uses k links at once, is min(Link, Nic(end) / k) over both
// ends: k is 1 in ring, recursive doubling and binomial steps (one send and one receive
// per rank), and the trees' rates already share the NICs; the messages of a step that
// leave (or enter) a rack share its uplink evenly. A step of parallel messages lasts as
// long as its slowest. A rank pair without a link makes an algorithm that needs
// it take +infinity; one rank takes 0.

// Ring allreduce in rank order 0 -> 1 -> ... -> n-1 -> 0: 2(n-1) steps of bytes/n.
double RingAllreduceSeconds(const LinkMatrix& links, int64_t bytes);
// Rabenseifner's: recursive halving reduce-scatter, then recursive doubling allgather
// (partners at distance 1 exchange the largest halves, as MPICH pairs them). With n not
// a power of two, the first 2r ranks (r = n minus the largest power of two below it) fold
// in pairs first, the even rank sending the whole tensor to the odd one, and get the
// result back the same way at the end.
double RecursiveDoublingAllreduceSeconds(const LinkMatrix& links, int64_t bytes);
// Allreduce over `trees` (reduce up, broadcast down each), as a pipeline per tree: its
// share (SplitByRate) in chunks (ChunkElements), each chunk one stage of latency + chunk
// / rate per link, plus the fill, 2 Height - 1 stages; the slowest tree. No trees:
// +infinity.
double TreesAllreduceSeconds(const LinkMatrix& links, const std::vector<SpanningTree>& trees,
                             int64_t bytes, int element_size);
// MPI's binomial tree from `root`, the whole message at every step.
double BinomialBroadcastSeconds(const LinkMatrix& links, int64_t bytes, int root);
// MPI's broadcast of large messages: a binomial scatter of n pieces from `root`, then a
// ring allgather in rank order.
double ScatterAllgatherBroadcastSeconds(const LinkMatrix& links, int64_t bytes, int root);
// Broadcast down `trees` (rooted where the broadcast's root is): the same pipeline with a
// fill of Height - 1 stages. No trees: +infinity.
double TreesBroadcastSeconds(const LinkMatrix& links, const std::vector<SpanningTree>& trees,
                             int64_t bytes, int element_size);

// How the executor splits `count` elements across trees: in proportion to rate, each
// share a whole number of elements, summing to count (largest remainder first, the lower
// tree on a tie). Empty when there are no trees.
std::vector<int64_t> SplitByRate(const std::vector<SpanningTree>& trees, int64_t count);
// The pipeline chunk for `tree`'s share of `share_elements`: the size that balances one
// latency per chunk against the pipeline's fill, within [kMinChunkBytes,
// kMaxChunkBytes], but no more than the share; a whole number of elements, at least 1.
constexpr int64_t kMinChunkBytes = 16 << 10;
constexpr int64_t kMaxChunkBytes = 1 << 20;
int64_t ChunkElements(int64_t share_elements, int element_size, const SpanningTree& tree,
                      double latency_seconds);

}  // namespace horde
