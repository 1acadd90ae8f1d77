#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/coordinator.h"
#include "core/fusion_planner.h"
#include "core/rank_join.h"
#include "core/request.h"
#include "core/response.h"
#include "core/response_cache.h"
#include "core/round_bits.h"
#include "core/transport.h"
#include "horde/status.h"

namespace horde {

// What a negotiator is tuned with; autotuning may change the first two between rounds,
// identically on every rank.
struct NegotiationSettings {
  int64_t fusion_threshold_bytes = 128 * 1024 * 1024;
  size_t cache_capacity = 1024;
  StallSettings stall;
  RankNames rank_names;  // how messages name the ranks
};

// One negotiation round, run collectively by every rank; every rank returns the same
// ResponseList.
//
// Fast path: a request whose signature is in the response cache is reported as a bit
// at its cache position. One bitwise-AND allreduce (core/round_bits.h) tells every rank
// which cached operations all ranks have submitted, plus the flags: does any rank have
// uncached requests, want to shut down, or join. In steady-state training that one
// small allreduce is the whole round.
//
// Slow path, only when some rank needs it: uncached requests are gathered to the
// coordinator (transport rank 0), which decides as core/coordinator.h says and
// broadcasts its list. Every rank then caches the new responses identically.
//
// A cached name submitted with a changed signature is invalidated on every rank and
// goes through the slow path (and its checks). So does a cached request pending on a
// rank for half the earliest stall limit (the check or the shutdown time), so that the
// coordinator's stall inspector sees it before the limit. Every request carries how
// long its rank has waited for it, so its age counts from submission either way.
//
// It holds this rank's side of join (core/rank_join.h): while a join is in progress,
// everything takes the slow path, since the coordinator decides what joined ranks
// contribute, and nothing is cached.
class Negotiator {
 public:
  using Clock = std::function<SteadyTime()>;

  Negotiator(
      Transport* transport, const NegotiationSettings& settings,
      Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Takes (moves out) mine->requests.
  Status RunRound(RequestList* mine, ResponseList* out);

  // Whether this rank has requests negotiated but not yet decided.
  bool has_undecided() const { return hit_count_ > 0 || !unsent_.empty() || !sent_.empty(); }
  // Names requested by some ranks but not yet by all (coordinator only).
  size_t pending_on_coordinator() const { return coordinator_.pending(); }
  const ResponseCache& cache() const { return cache_; }
  int64_t fast_path_responses() const { return fast_path_responses_; }
  int64_t slow_rounds() const { return slow_rounds_; }

  void set_fusion_threshold(int64_t bytes);
  // Off: no lookups and no insertions (the contents stay, identical on every rank).
  void set_cache_enabled(bool enabled) { cache_enabled_ = enabled; }
  // Rank 0's word for the next round's bit allreduce, and the last one every rank got.
  void set_coordinator_word(uint64_t word) { word_to_send_ = word; }
  uint64_t coordinator_word() const { return word_received_; }

  // This rank's join, which the runtime asks for the entries it executes.
  RankJoin& join() { return join_; }

 private:
  void Classify(Request request, SteadyTime now, RoundBits* mine);
  // How long a cached request may wait for the other ranks before it goes to the
  // coordinator, whose stall inspector must see it in time.
  std::chrono::duration<double> HitPatience() const;
  void InvalidateStalledHits(SteadyTime now, RoundBits* mine);
  // Sends the pending hits that `leave(position, request)` selects back through the slow
  // path. A template: a std::function of a capturing lambda would allocate every round.
  template <typename Leave>
  void ReturnHits(const Leave& leave);
  void TakeFastResponses(const RoundBits& all, std::vector<Response>* out);
  Status RunSlowPath(const RequestList& mine, SteadyTime now, ResponseList* decided);
  // Caches what the slow path decided and forgets the requests it answered.
  void Learn(const ResponseList& decided);

  Transport* transport_;
  const StallSettings stall_;
  Clock clock_;
  ResponseCache cache_;
  FusionPlanner planner_;
  Coordinator coordinator_;

  // Cached requests waiting for the other ranks, at their cache positions (a name is in
  // flight once, so a position holds one), and how many there are.
  std::vector<std::optional<Request>> hit_at_;
  size_t hit_count_ = 0;
  // Kept from round to round, so that a cached round allocates nothing for them.
  RoundBits mine_bits_;
  RoundBits all_bits_;
  std::vector<uint64_t> words_;
  std::vector<PlannedResponse> ready_;   // its first entries are this round's
  std::vector<Request> unsent_;          // for the coordinator, next slow round
  std::map<std::string, Request> sent_;  // with the coordinator, undecided
  int32_t sent_epoch_ = 0;               // the numbering epoch the coordinator knows
  RankJoin join_;
  bool cache_enabled_ = true;
  uint64_t word_to_send_ = ~uint64_t{0};
  uint64_t word_received_ = ~uint64_t{0};
  int64_t fast_path_responses_ = 0;
  int64_t slow_rounds_ = 0;
};

}  // namespace horde
