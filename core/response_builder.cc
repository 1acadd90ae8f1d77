#include "core/response_builder.h"

#include <cstdlib>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/joined_ranks.h"
#include "core/message_table.h"
#include "core/op_traits.h"
#include "core/shortest_number.h"

namespace horde {
namespace {

// " (rank 0 called it at a.py:6, rank 1 at a.py:9)": where the ranks submitted the
// request, when they know; empty when none does.
std::string CallSitesSuffix(const std::vector<Request>& by_rank, const RankNames& names) {
  std::vector<const Request*> requests;
  for (const auto& r : by_rank) requests.push_back(&r);
  const std::string called = CalledAt(CallSitesOf(requests), "it", names);
  return called.empty() ? "" : " (" + called + ")";
}

// Compares one field across ranks. On disagreement, writes an error naming each value
// and the ranks holding it, e.g. "float32 on rank 0; int32 on rank 1", then where they
// called it.
bool Agree(const std::vector<Request>& by_rank, const RankNames& names, const char* field,
           const std::function<std::string(const Request&)>& value, std::string* error) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  for (const auto& r : by_rank) ranks_by_value[value(r)].push_back(r.rank);
  if (ranks_by_value.size() <= 1) return true;
  std::string detail;
  for (const auto& kv : ranks_by_value) {
    if (!detail.empty()) detail += "; ";
    detail += kv.first + " on " + names.List(kv.second);
  }
  *error = "ranks disagree on the " + std::string(field) + " of " + OpTypeName(by_rank[0].op) +
           " '" + by_rank[0].name + "': " + detail + CallSitesSuffix(by_rank, names);
  return false;
}

std::string TrailingShape(const Request& r) {
  if (r.shape.empty()) return "a scalar";
  TensorShape rest(r.shape.begin() + 1, r.shape.end());
  return "[*" + (rest.empty() ? std::string("]") : ", " + ShapeString(rest).substr(1));
}

bool CheckConsistent(const std::vector<Request>& by_rank, const RankNames& names,
                     std::string* error) {
  using R = const Request&;
  auto agree = [&](const char* field, const std::function<std::string(R)>& value) {
    return Agree(by_rank, names, field, value, error);
  };
  if (!agree("operation", [](R r) { return std::string(OpTypeName(r.op)); }) ||
      !agree("group",
             [](R r) { return r.group.empty() ? "no group" : "group '" + r.group + "'"; }) ||
      !agree("dtype", [](R r) { return std::string(DataTypeName(r.dtype)); }) ||
      // CPU against GPU only: each rank normally drives its own GPU (cuda:0, cuda:1, ...).
      !agree("device", [](R r) { return std::string(r.device == kCpuDevice ? "cpu" : "gpu"); })) {
    return false;
  }
  const uint32_t agreed = TraitsOf(by_rank[0].op).agreed;
  auto agree_if = [&](AgreedField f, const char* field,
                      const std::function<std::string(R)>& value) {
    return (agreed & f) == 0 || agree(field, value);
  };
  return agree_if(kAgreeRoot, "root rank",
                  [&](R r) { return std::to_string(names.World(r.root)); }) &&
         agree_if(kAgreeShape, "shape", [](R r) { return ShapeString(r.shape); }) &&
         agree_if(kAgreeRowShape, "shape (all but the first dimension)", TrailingShape) &&
         agree_if(kAgreeReduceOp, "reduce op",
                  [](R r) { return std::string(ReduceOpName(r.reduce_op)); }) &&
         agree_if(kAgreeScale, "prescale factor", [](R r) { return ShortestNumber(r.prescale); }) &&
         agree_if(kAgreeScale, "postscale factor", [](R r) { return ShortestNumber(r.postscale); });
}

}  // namespace

Response BuildResponse(const std::vector<Request>& by_rank, const std::vector<int>& joined_ranks,
                       const RankNames& names) {
  const Request& first = by_rank[0];
  Response response;
  response.op = first.op;
  response.names = {first.name};
  std::string error;
  if (!CheckConsistent(by_rank, names, &error) ||
      !RunsWithJoinedRanks(first, joined_ranks, names, &error)) {
    response.kind = Response::Kind::kError;
    response.error_message = error;
    return response;
  }
  response.dtype = first.dtype;
  response.reduce_op = first.reduce_op;
  response.prescale = first.prescale;
  response.postscale = first.postscale;
  response.root = first.root;
  response.device = first.device;
  switch (TraitsOf(first.op).per_name) {
    case PerName::kNothing: break;
    case PerName::kTensorSize: response.tensor_sizes = {NumElements(first.shape)}; break;
    case PerName::kEveryRankRows:
      for (const auto& r : by_rank) response.first_dims.push_back(r.shape.empty() ? 1 : r.shape[0]);
      break;
  }
  response.with_joined = !joined_ranks.empty();
  return response;
}

}  // namespace horde
