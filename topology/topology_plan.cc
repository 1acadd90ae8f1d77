#include "topology/topology_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "topology/collective_cost.h"
#include "topology/link_bounds.h"
#include "topology/tree_packing.h"

namespace horde {
namespace {

constexpr int kFloat32 = 4;

template <typename... Args>
std::string Printf(const char* format, Args... args) {
  char text[160];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

std::string Size(int64_t bytes) {
  if (bytes >= (1 << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string TreeLine(size_t index, const SpanningTree& tree) {
  std::string parents;
  for (int p : tree.parent) parents += (parents.empty() ? "" : " ") + std::to_string(p);
  return "  tree " + std::to_string(index) + ": root " + std::to_string(tree.root) + ", parents [" +
         parents + "], height " + std::to_string(tree.Height()) +
         Printf(", %.4g Gbit/s\n", BytesToGbit(tree.rate));
}

}  // namespace

TopologyPlan::TopologyPlan(LinkMatrix links, const TopologyPlanOptions& options)
    : links_(std::move(links)), options_(options) {
  links_.set_latency_seconds(std::max(links_.latency_seconds(), options_.min_latency_seconds));
  const int max_trees = options_.max_trees > 0 ? options_.max_trees
                                               : std::clamp(links_.size(), 4, 16);
  trees_ = PackSpanningTrees(links_, max_trees);
}

TopologyPlan::Allreduce TopologyPlan::AllreduceFor(int64_t bytes, int element_size) const {
  if (trees_.empty() || bytes < options_.min_allreduce_bytes) return Allreduce::kMpi;
  const double ring = RingAllreduceSeconds(links_, bytes);
  const double doubling = RecursiveDoublingAllreduceSeconds(links_, bytes);
  if (TreesAllreduceSeconds(links_, trees_, bytes, element_size) * options_.allreduce_margin <
      std::min(ring, doubling)) {
    return Allreduce::kTrees;
  }
  // A ring over a missing link never ends; on two ranks it is recursive doubling's one
  // exchange, which MPI runs as well.
  return links_.size() > 2 && std::isfinite(ring) && ring <= doubling * options_.ring_margin
             ? Allreduce::kRing
             : Allreduce::kMpi;
}

bool TopologyPlan::TreesForBroadcast(int64_t bytes, int element_size, int root) const {
  if (trees_.empty()) return false;
  const double trees = TreesBroadcastSeconds(links_, TreesRootedAt(root), bytes, element_size);
  const double mpi = std::min(BinomialBroadcastSeconds(links_, bytes, root),
                              ScatterAllgatherBroadcastSeconds(links_, bytes, root));
  return trees * options_.broadcast_margin < mpi;
}

std::vector<SpanningTree> TopologyPlan::TreesRootedAt(int root) const {
  std::vector<SpanningTree> rooted;
  for (const SpanningTree& tree : trees_) rooted.push_back(tree.RootedAt(root));
  return rooted;
}

int64_t TopologyPlan::AllreduceThresholdBytes() const {
  for (int64_t bytes = 4 << 10; bytes <= (int64_t{1} << 30); bytes *= 2) {
    if (TreesForAllreduce(bytes, kFloat32)) return bytes;
  }
  return -1;
}

std::string TopologyPlan::RingLine() const {
  int64_t from = -1, to = -1;
  for (int64_t bytes = 4 << 10; bytes <= (int64_t{1} << 30); bytes *= 2) {
    if (AllreduceFor(bytes, kFloat32) != Allreduce::kRing) continue;
    if (from < 0) from = bytes;
    to = bytes;
  }
  if (from < 0) return "";
  return "  ring in rank order runs allreduce (float32) from " + Size(from) +
         (to < (int64_t{1} << 30) ? " to " + Size(to) : "") + "\n";
}

std::string TopologyPlan::Describe() const {
  const int n = links_.size();
  std::string text = "topology plan: " + std::to_string(n) + " ranks, ";
  if (trees_.empty()) {
    return text + (n < 2 ? "no trees (nothing to send)\n"
                         : "no trees (the links do not connect every rank)\n");
  }
  double total = 0;
  for (const SpanningTree& tree : trees_) total += tree.rate;
  const double bound = AllreduceRateBound(links_);
  text += std::to_string(trees_.size()) + " trees" +
          Printf(" carrying %.4g Gbit/s together; allreduce bound %.4g Gbit/s\n",
                 BytesToGbit(total), BytesToGbit(bound));
  if (links_.racks() > 0) {
    text += "  racks";
    for (int r = 0; r < n; ++r) text += " " + std::to_string(links_.Rack(r));
    text += "; uplinks";
    for (int k = 0; k < links_.racks(); ++k) {
      text += Printf(" %.4g", BytesToGbit(links_.Uplink(k)));
    }
    text += " Gbit/s\n";
  }
  for (size_t t = 0; t < trees_.size(); ++t) text += TreeLine(t, trees_[t]);
  text += Printf("  %-24s %10s %13s %11s %11s\n", "allreduce ms (float32)", "ring", "rec.doubling",
                 "trees", "bound");
  for (int64_t mib : {1, 4, 16, 64}) {
    const int64_t bytes = mib << 20;
    text += Printf("  %-24s %10.4g %13.4g %11.4g %11.4g\n", (Size(bytes) + ":").c_str(),
                   RingAllreduceSeconds(links_, bytes) * 1e3,
                   RecursiveDoublingAllreduceSeconds(links_, bytes) * 1e3,
                   TreesAllreduceSeconds(links_, trees_, bytes, kFloat32) * 1e3,
                   static_cast<double>(bytes) / bound * 1e3);
  }
  const int64_t threshold = AllreduceThresholdBytes();
  text += threshold < 0 ? "  trees never win allreduce (float32) up to 1 GiB\n"
                        : "  trees win allreduce (float32) from " + Size(threshold) + "\n";
  return text + RingLine();
}

}  // namespace horde
