#include "core/negotiator.h"

#include <algorithm>

#include "core/op_traits.h"
#include "core/wire_codec.h"

namespace horde {

Negotiator::Negotiator(Transport* transport, const NegotiationSettings& settings, Clock clock)
    : transport_(transport),
      stall_(settings.stall),
      clock_(std::move(clock)),
      cache_(settings.cache_capacity),
      planner_(settings.fusion_threshold_bytes),
      coordinator_(transport->size(), settings.fusion_threshold_bytes, settings.stall,
                   settings.rank_names) {}

void Negotiator::set_fusion_threshold(int64_t bytes) {
  planner_ = FusionPlanner(bytes);
  coordinator_.set_fusion_threshold(bytes);
}

template <typename Leave>
void Negotiator::ReturnHits(const Leave& leave) {
  if (hit_count_ == 0) return;
  for (uint32_t position = 0; position < hit_at_.size(); ++position) {
    std::optional<Request>& hit = hit_at_[position];
    if (!hit || !leave(position, *hit)) continue;
    unsent_.push_back(std::move(*hit));
    hit.reset();
    --hit_count_;
  }
}

Status Negotiator::RunRound(RequestList* mine, ResponseList* out) {
  const SteadyTime now = clock_();
  RoundBits& bits = mine_bits_;  // reset field by field: the vectors keep their capacity
  bits.ready.clear();
  bits.invalid.clear();
  bits.join = false;
  bits.coordinator_word = ~uint64_t{0};
  for (Request& request : mine->requests) Classify(std::move(request), now, &bits);
  InvalidateStalledHits(now, &bits);
  bits.shutdown = mine->shutdown;
  // A new numbering epoch must reach the coordinator even when all else is cached.
  bits.uncached = !unsent_.empty() || mine->numbering_epoch != sent_epoch_;
  bits.slow_round = transport_->rank() == 0 && coordinator_.WantsRound(now);
  for (uint32_t position = 0; position < hit_at_.size(); ++position) {
    if (hit_at_[position]) bits.ready.push_back(position);
  }
  if (transport_->rank() == 0) bits.coordinator_word = word_to_send_;

  const size_t positions = cache_.num_positions();
  EncodeRoundBits(bits, positions, &words_);
  HORDE_RETURN_IF_ERROR(transport_->AllreduceAnd(&words_));
  const RoundBits& all = all_bits_;
  DecodeRoundBits(words_, positions, &all_bits_);
  word_received_ = all.coordinator_word;

  if (all.join) join_.SawJoin();
  TakeFastResponses(all, &out->responses);
  out->shutdown = all.shutdown;
  out->shutdown_reason.clear();
  for (uint32_t position : all.invalid) {
    ReturnHits([position](uint32_t at, const Request&) { return at == position; });
    cache_.Erase(position);
  }
  if (join_.in_progress()) ReturnHits([](uint32_t, const Request&) { return true; });

  // A shutdown goes through the coordinator too, so a failed rank's reason reaches all.
  if (all.uncached || !all.invalid.empty() || all.slow_round || all.shutdown ||
      join_.in_progress()) {
    ResponseList decided;
    HORDE_RETURN_IF_ERROR(RunSlowPath(*mine, now, &decided));
    Learn(decided);
    out->shutdown = out->shutdown || decided.shutdown;
    out->shutdown_reason = decided.shutdown_reason;
    for (auto& response : decided.responses) out->responses.push_back(std::move(response));
  }
  // Entries this round's insertions evicted no longer answer the hits waiting on them.
  ReturnHits([this](uint32_t position, const Request& request) {
    return !cache_.Holds(position, request.name);
  });
  return Status::Ok();
}

void Negotiator::Classify(Request request, SteadyTime now, RoundBits* mine) {
  if (request.submitted == SteadyTime()) request.submitted = now;
  if (request.op == OpType::kJoin) {
    join_.Joining();
    mine->join = true;
    unsent_.push_back(std::move(request));
    return;
  }
  uint32_t position = 0;
  ResponseCache::Match match = ResponseCache::Match::kMiss;
  if (cache_enabled_ && !join_.in_progress() && request.group.empty()) {
    match = cache_.Find(request, &position);
  }
  if (match == ResponseCache::Match::kHit) {
    if (hit_at_.size() <= position) hit_at_.resize(position + 1);
    hit_at_[position] = std::move(request);
    ++hit_count_;
    return;
  }
  if (match == ResponseCache::Match::kChanged) mine->invalid.push_back(position);
  unsent_.push_back(std::move(request));
}

// Half the earliest stall limit: early enough that the coordinator holds the request
// (with its age) before the limit comes, late enough that a rank a little behind the
// others costs no slow round.
std::chrono::duration<double> Negotiator::HitPatience() const {
  double limit = stall_.check_seconds;
  if (stall_.shutdown_seconds > 0) limit = std::min(limit, stall_.shutdown_seconds);
  return std::chrono::duration<double>(limit / 2);
}

void Negotiator::InvalidateStalledHits(SteadyTime now, RoundBits* mine) {
  if (!stall_.enabled) return;
  const auto patience = HitPatience();
  ReturnHits([&](uint32_t position, const Request& request) {
    if (now - request.submitted < patience) return false;
    mine->invalid.push_back(position);
    return true;
  });
}

void Negotiator::TakeFastResponses(const RoundBits& all, std::vector<Response>* out) {
  size_t count = 0;
  for (uint32_t position : all.ready) {
    const Response& response = cache_.response(position);
    // What the coordinator planned with, from the request every rank agreed on. Every
    // rank holds the hit: all set its bit, and a join forces the slow path.
    int64_t bytes = 0;
    if (position < hit_at_.size() && hit_at_[position]) {
      bytes = FusionBytes(response, *hit_at_[position]);
      hit_at_[position].reset();
      --hit_count_;
    }
    cache_.Touch(position);
    // Copied into the response kept there from earlier rounds (its vectors' capacity).
    if (ready_.size() <= count) ready_.emplace_back();
    ready_[count].response = response;
    ready_[count].bytes = bytes;
    ++count;
  }
  fast_path_responses_ += static_cast<int64_t>(count);
  planner_.Plan(ready_, count, out);
}

Status Negotiator::RunSlowPath(const RequestList& mine, SteadyTime now, ResponseList* decided) {
  ++slow_rounds_;
  RequestList list;
  list.shutdown = mine.shutdown;
  list.failure = mine.failure;
  list.numbering_epoch = mine.numbering_epoch;
  sent_epoch_ = mine.numbering_epoch;
  list.requests.swap(unsent_);
  for (Request& request : list.requests) {
    request.waited_microseconds = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(now - request.submitted).count());
    sent_[request.name] = request;
  }

  std::vector<std::string> gathered;
  HORDE_RETURN_IF_ERROR(transport_->GatherToCoordinator(EncodeRequestList(list), &gathered));
  std::string decision;
  Status coordinated;
  if (transport_->rank() == 0) {
    ResponseList coordinated_list;
    coordinated = coordinator_.Coordinate(gathered, now, &coordinated_list);
    if (coordinated.ok()) decision = EncodeResponseList(coordinated_list);
  }
  // A failed coordinator still broadcasts (an empty decision, which no valid list encodes
  // to), so the other ranks fail this round with it instead of waiting forever.
  HORDE_RETURN_IF_ERROR(transport_->BroadcastFromCoordinator(&decision));
  HORDE_RETURN_IF_ERROR(coordinated);
  if (decision.empty()) return Status::Internal("the coordinator failed this negotiation round");
  return DecodeResponseList(decision, decided);
}

void Negotiator::Learn(const ResponseList& decided) {
  for (const Response& response : decided.responses) {
    if (!Concerns(response, transport_->rank())) continue;
    if (response.op == OpType::kJoin) join_.SawCompletion();
    // Whether to cache must be decided alike on every rank: a successful response means
    // every rank asked with the same group, and no rank is joined (which would leave it
    // without a request of its own to compare later submissions with).
    bool cacheable = cache_enabled_ && response.kind == Response::Kind::kCollective &&
                     response.op != OpType::kJoin && !join_.in_progress();
    for (const std::string& name : response.names) {
      auto it = sent_.find(name);
      if (it != sent_.end() && !it->second.group.empty()) cacheable = false;
    }
    if (cacheable) {
      for (const Response& single : SplitResponse(response)) {
        auto it = sent_.find(single.names[0]);
        cache_.Put(single, it == sent_.end() ? nullptr : &it->second);
      }
    }
    for (const std::string& name : response.names) sent_.erase(name);
  }
}

}  // namespace horde
