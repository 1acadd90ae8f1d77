#include "core/coordinator.h"

#include <algorithm>
#include <optional>

#include "core/logging.h"
#include "core/op_traits.h"
#include "core/response_builder.h"
#include "core/wire_codec.h"

namespace horde {

std::vector<int> Coordinator::Owing(const Response& error) const {
  std::vector<int> owing;
  for (int rank = 0; rank < table_.world_size(); ++rank) {
    const bool asked = std::find(error.ranks.begin(), error.ranks.end(), rank) != error.ranks.end();
    if (!asked && !table_.joined().Has(rank)) owing.push_back(rank);
  }
  return owing;
}

bool Coordinator::WantsRound(SteadyTime now) const {
  return table_.pending() > 0 && now >= inspector_.next_due();
}

Status Coordinator::Coordinate(const std::vector<std::string>& gathered, SteadyTime now,
                               ResponseList* out) {
  std::vector<Response> settled;  // late requests for names that failed elsewhere
  for (size_t rank = 0; rank < gathered.size(); ++rank) {
    RequestList list;
    Status s = DecodeRequestList(gathered[rank], &list);
    if (!s.ok()) {
      return Status::Internal("from rank " + std::to_string(rank) + ": " + s.message());
    }
    out->shutdown = out->shutdown || list.shutdown;
    epochs_.Saw(static_cast<int>(rank), list.numbering_epoch);
    if (!list.failure.empty() && out->shutdown_reason.empty()) {
      out->shutdown_reason = names_.One(static_cast<int>(rank)) + " failed: " + list.failure;
    }
    for (auto& request : list.requests) {
      request.rank = static_cast<int32_t>(rank);
      if (request.op == OpType::kJoin) {
        table_.Join(request.rank);
        failed_.Forget(request.rank);
      } else if (std::optional<Response> owed = failed_.Settle(request)) {
        settled.push_back(std::move(*owed));
      } else {
        table_.Add(request, now);
        inspector_.Noted(SubmittedAt(request, now));
      }
    }
  }
  std::vector<Response> outrun = epochs_.FailOutrun(&table_, names_);
  const std::vector<int> joined = table_.joined().ranks();
  std::vector<PlannedResponse> ready;
  for (const auto& requests : table_.TakeReady()) {
    Response response = BuildResponse(requests, joined, names_);
    const int64_t bytes = FusionBytes(response, requests[0]);
    ready.push_back({std::move(response), bytes});
  }
  out->responses = planner_.Plan(ready);
  for (auto& error : outrun) out->responses.push_back(std::move(error));
  for (auto& error : settled) out->responses.push_back(std::move(error));
  // After the ready names are taken, so a name that just became ready never counts.
  StallInspector::Findings stalls = inspector_.Inspect(now, &table_);
  if (!stalls.report.empty()) HORDE_LOG(kWarning) << stalls.report;
  for (auto& error : stalls.failed) {
    failed_.Failed(error, Owing(error));
    out->responses.push_back(std::move(error));
  }
  // Once every rank has joined, the join completes after all else that was ready.
  if (std::optional<Response> join = table_.joined().TakeCompletion()) {
    out->responses.push_back(std::move(*join));
  }
  return Status::Ok();
}

}  // namespace horde
