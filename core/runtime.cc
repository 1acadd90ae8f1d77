#include "core/runtime.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <exception>

#include "core/logging.h"
#include "core/op_traits.h"
#include "core/operation_name.h"
#include "core/rank_agreement.h"
#include "core/request_validator.h"

namespace horde {
namespace {

RoundPacer::Duration CycleTime(double ms) {
  return RoundPacer::Duration(static_cast<int64_t>(ms * 1000.0));
}

NegotiationSettings NegotiationSettingsOf(const Config& config, const Topology& topology) {
  NegotiationSettings settings;
  settings.rank_names = RankNames(topology.world_ranks);
  settings.fusion_threshold_bytes = config.fusion_threshold_bytes;
  settings.cache_capacity = static_cast<size_t>(config.cache_capacity);
  settings.stall = config.stall;
  return settings;
}

// The timeline's name for a collective's communication phase, e.g. "ALLGATHER".
std::string CollectivePhaseName(OpType op) {
  std::string name = OpTypeName(op);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

Runtime::Runtime(Config config, Topology topology, std::unique_ptr<Transport> transport,
                 std::unique_ptr<OpRegistry> ops, std::shared_ptr<Timeline> timeline)
    : config_(std::move(config)),
      topology_(std::move(topology)),
      transport_(std::move(transport)),
      ops_(std::move(ops)),
      timeline_(timeline ? std::move(timeline) : std::make_shared<Timeline>()),
      negotiator_(transport_.get(), NegotiationSettingsOf(config_, topology_)),
      pacer_(CycleTime(config_.cycle_time_ms)),
      straggler_(topology_.rank, config_.straggler_report) {
  TunableParameters configured{config_.fusion_threshold_bytes, config_.cycle_time_ms,
                               config_.cache_capacity > 0};
  stats_.fusion_threshold_bytes = configured.fusion_threshold_bytes;
  stats_.cycle_time_ms = configured.cycle_time_ms;
  stats_.cache_enabled = configured.cache_enabled;
  if (config_.autotune) {
    autotuner_ = std::make_unique<Autotuner>(configured, config_.autotune_sample_seconds);
    applied_choice_ = autotuner_->choice();
  }
  loop_ = std::thread([this] { Loop(); });
}

Status Runtime::OpenAutotuneLog() {
  if (!autotuner_ || config_.autotune_log.empty() || topology_.rank != 0) return Status::Ok();
  return autotuner_->OpenLog(config_.autotune_log);
}

Runtime::~Runtime() { Shutdown(); }

Status Runtime::Enqueue(Request request, TensorEntry entry) {
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  requests.push_back(std::move(request));
  entries.push_back(std::move(entry));
  return Enqueue(&requests, &entries);
}

Status Runtime::Enqueue(std::vector<Request>* requests, std::vector<TensorEntry>* entries) {
  for (auto& request : *requests) {
    request.rank = topology_.rank;
    HORDE_RETURN_IF_ERROR(ValidateRequest(request, topology_));
  }
  // Names are drawn only once every request is valid, so a local mistake on one rank
  // does not shift the numbering that must match across ranks.
  const SteadyTime now = std::chrono::steady_clock::now();  // stall ages count from here
  for (size_t i = 0; i < requests->size(); ++i) {
    Request& request = (*requests)[i];
    request.submitted = now;
    (*entries)[i].submitted = now;
    negotiator_.join().Submitting(&request);
    if (request.name.empty()) {
      request.name = unnamed_.Next(OpTypeName(request.op), &request.numbering_epoch);
    }
    (*entries)[i].name = request.name;
  }
  return queue_.Add(requests, entries);
}

Status Runtime::EnqueueGroup(std::string group, std::vector<Request>* requests,
                             std::vector<TensorEntry>* entries) {
  for (auto& request : *requests) {
    request.rank = topology_.rank;
    HORDE_RETURN_IF_ERROR(ValidateRequest(request, topology_));
  }
  int32_t epoch = -1;
  if (group.empty()) group = unnamed_.Next("group", &epoch);
  for (size_t i = 0; i < requests->size(); ++i) {
    Request& request = (*requests)[i];
    if (request.name.empty()) request.name = group + "." + std::to_string(i);
    request.numbering_epoch = epoch;
    request.group = group;
    request.group_size = static_cast<int32_t>(requests->size());
  }
  return Enqueue(requests, entries);
}

void Runtime::StartNumberingEpoch() { unnamed_.StartEpoch(); }

void Runtime::Shutdown() {
  shutdown_requested_ = true;
  queue_.Wake();
  if (loop_.joinable()) loop_.join();
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) return Status::InvalidArgument("start_timeline: the file path is empty");
  // With "{rank}" in the path every rank writes its own file; otherwise rank 0 alone.
  const size_t placeholder = path.find(kTimelineRankPlaceholder);
  if (placeholder == std::string::npos) {
    return topology_.rank == 0 ? timeline_->Start(path, mark_cycles) : Status::Ok();
  }
  std::string own = path;
  own.replace(placeholder, std::strlen(kTimelineRankPlaceholder), std::to_string(topology_.rank));
  return timeline_->Start(own, mark_cycles);
}

Status Runtime::StopTimeline() { return timeline_->Stop(); }

void Runtime::Abort(const std::string& failure) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_.empty()) failure_ = failure.empty() ? "unknown error" : failure;
  }
  Shutdown();
}

RuntimeStats Runtime::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

void Runtime::Loop() {
  Status exit_status = Status::Aborted("horde has been shut down");
  RoundPacer::Duration wait = pacer_.Next(false, false);
  // Kept from round to round, with the buffers inside them.
  RequestList mine;
  ResponseList decided;
  while (true) {
    queue_.WaitForWork(wait, pacer_.spin());
    const SteadyTime round_started = std::chrono::steady_clock::now();
    timeline_->MarkCycle();
    if (autotuner_ && topology_.rank == 0) negotiator_.set_coordinator_word(autotuner_->choice());
    // The epoch first: every numbered request of an earlier epoch is in the queue by now.
    mine.numbering_epoch = unnamed_.epoch();
    queue_.TakeNewRequests(&mine.requests);
    const bool submitted = !mine.requests.empty();
    for (const auto& r : mine.requests) {
      timeline_->NegotiateStart(r.name, r.op, r.submitted, round_started);
    }
    mine.shutdown = shutdown_requested_.load();
    if (mine.shutdown) {
      std::lock_guard<std::mutex> lock(failure_mu_);
      mine.failure = failure_;
    }
    Status s = negotiator_.RunRound(&mine, &decided);
    const SteadyTime decided_at = std::chrono::steady_clock::now();
    if (!s.ok()) {
      exit_status = Status::Internal("horde stopped: negotiation with the other ranks failed: " +
                                     s.message());
      HORDE_LOG(kError) << exit_status.message();
      break;
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.negotiation_rounds;
      stats_.slow_rounds = negotiator_.slow_rounds();
      stats_.cache_hits = negotiator_.fast_path_responses();
    }
    for (const auto& response : decided.responses) {
      for (const auto& name : response.names) timeline_->NegotiateEnd(name, round_started);
      timeline_->ActivityStart(response.names, "QUEUE");
    }
    round_bytes_ = 0;
    round_latest_submission_ = SteadyTime();
    round_first_collective_end_ = SteadyTime();
    for (const auto& response : decided.responses) Execute(response);
    if (autotuner_) Tune();
    if (decided.shutdown) {
      if (!decided.shutdown_reason.empty()) exit_status = Status::Aborted(decided.shutdown_reason);
      break;
    }
    if (!decided.responses.empty()) {
      bool reported = false;
      const SteadyTime settled = round_first_collective_end_ == SteadyTime()
                                     ? decided_at
                                     : round_first_collective_end_;
      s = straggler_.EndRound(round_latest_submission_, settled, transport_.get(), &reported);
      if (reported) timeline_->Note("STRAGGLER_REPORT", StragglerReportJson(straggler_.report()));
      if (!s.ok()) {
        exit_status = Status::Internal(
            "horde stopped: exchanging waits with the other ranks failed: " + s.message());
        HORDE_LOG(kError) << exit_status.message();
        break;
      }
    }
    const bool progressed = submitted || !decided.responses.empty();
    wait = pacer_.Next(progressed, negotiator_.has_undecided());
  }
  stopped_ = true;
  for (auto& entry : queue_.Close(exit_status)) CompleteEntry(entry, exit_status);
  timeline_->Stop();
}

void Runtime::CompleteJoin(const Response& response) {
  std::vector<TensorEntry> entries;
  negotiator_.join().Complete(response, &queue_, &entries);
  StartNumberingEpoch();
  Record(response, entries);
  for (auto& entry : entries) CompleteEntry(entry, Status::Ok());
}

void Runtime::Execute(const Response& response) {
  if (response.op == OpType::kJoin) return CompleteJoin(response);
  // An error for other ranks' requests: this rank may already hold its next request of
  // the same name, which must go on waiting.
  if (!Concerns(response, topology_.rank)) return;
  std::vector<TensorEntry>& entries = executing_;
  entries.clear();
  Status status = negotiator_.join().TakeEntries(response, &queue_, *ops_, &entries);
  // Only a joined rank makes tensors here; if it cannot, every rank fails the op alike,
  // and none is left waiting inside the collective.
  if (response.with_joined && response.kind == Response::Kind::kCollective) {
    status = AgreeAllSucceeded(transport_.get(), status,
                               OperationName(OpTypeName(response.op), response.names),
                               RankNames(topology_.world_ranks));
  }
  if (status.ok() && response.kind == Response::Kind::kError) {
    status = Status::PreconditionError(response.error_message).Agreed();
  } else if (status.ok()) {
    if (!TraitsOf(response.op).records_own_phases) {
      timeline_->ActivityStart(response.names, CollectivePhaseName(response.op));
    }
    try {
      status = ops_->Execute(entries, response);
    } catch (const std::exception& e) {
      status = Status::Internal(std::string(OpTypeName(response.op)) + " failed: " + e.what());
    }
  }
  if (!status.ok()) HORDE_LOG(kDebug) << status.message();
  // Before the callers go on, so that every rank renumbers at the same point.
  if (status.ok() && TraitsOf(response.op).renumbers) StartNumberingEpoch();
  if (status.ok() && response.kind == Response::Kind::kCollective &&
      round_first_collective_end_ == SteadyTime()) {
    round_first_collective_end_ = std::chrono::steady_clock::now();
  }
  Record(response, entries);
  for (auto& entry : entries) {
    CompleteEntry(entry, status);
    timeline_->End(entry.name);
  }
  entries.clear();  // the vector keeps its capacity
}

void Runtime::Tune() {
  const uint64_t choice = negotiator_.coordinator_word();
  // All ones: rank 0 sent no choice (it is not autotuning), so there is nothing to apply.
  if (choice != ~uint64_t{0} && choice != applied_choice_) {
    applied_choice_ = choice;
    Apply(autotuner_->Decode(choice));
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.autotune_settled = Autotuner::IsSettled(choice);
  }
  if (topology_.rank == 0) autotuner_->Record(round_bytes_, Autotuner::Clock::now());
}

void Runtime::Apply(const TunableParameters& parameters) {
  negotiator_.set_fusion_threshold(parameters.fusion_threshold_bytes);
  negotiator_.set_cache_enabled(parameters.cache_enabled);
  pacer_.set_cycle_time(CycleTime(parameters.cycle_time_ms));
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.fusion_threshold_bytes = parameters.fusion_threshold_bytes;
  stats_.cycle_time_ms = parameters.cycle_time_ms;
  stats_.cache_enabled = parameters.cache_enabled;
}

void Runtime::Record(const Response& response, const std::vector<TensorEntry>& entries) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  ++stats_.responses_executed;
  if (response.kind == Response::Kind::kError) {
    ++stats_.error_responses;
    return;
  }
  auto op = static_cast<size_t>(response.op);
  for (const auto& entry : entries) {
    round_latest_submission_ = std::max(round_latest_submission_, entry.submitted);
    if (!entry.input) continue;  // an identity a joined rank could not make
    ++stats_.tensors[op];
    stats_.bytes[op] += entry.input->size_bytes();
    round_bytes_ += entry.input->size_bytes();
  }
  if (entries.size() > 1) {
    ++stats_.fused_responses;
    stats_.fused_tensors += static_cast<int64_t>(entries.size());
  }
}

}  // namespace horde
