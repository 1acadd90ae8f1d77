#include "core/shared_config.h"

#include <cstdlib>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

#include "core/logging.h"
#include "core/rank_names.h"
#include "core/shortest_number.h"

namespace horde {
namespace {

// The decision's first characters when the builds differ (then the list of them).
constexpr char kBuildMismatch[] = "?builds ";

std::string Switch(bool on) { return on ? "1" : "0"; }

// One shared setting: HORDE_<suffix>, its value as that variable would be set, and how
// to take it over from a config holding rank 0's.
struct SharedSetting {
  const char* suffix;
  std::string (*value)(const Config&);
  void (*adopt)(const Config& from, Config* to);
};

const SharedSetting kShared[] = {
    {"FUSION_THRESHOLD", [](const Config& c) { return std::to_string(c.fusion_threshold_bytes); },
     [](const Config& f, Config* t) { t->fusion_threshold_bytes = f.fusion_threshold_bytes; }},
    {"CACHE_CAPACITY", [](const Config& c) { return std::to_string(c.cache_capacity); },
     [](const Config& f, Config* t) { t->cache_capacity = f.cache_capacity; }},
    {"CYCLE_TIME", [](const Config& c) { return ShortestNumber(c.cycle_time_ms); },
     [](const Config& f, Config* t) { t->cycle_time_ms = f.cycle_time_ms; }},
    {"AUTOTUNE", [](const Config& c) { return Switch(c.autotune); },
     [](const Config& f, Config* t) { t->autotune = f.autotune; }},
    {"GPU_OPERATIONS",
     [](const Config& c) { return std::string(c.gpu_operations_nccl ? "NCCL" : "MPI"); },
     [](const Config& f, Config* t) { t->gpu_operations_nccl = f.gpu_operations_nccl; }},
    {"HIERARCHICAL_ALLREDUCE", [](const Config& c) { return Switch(c.hierarchical_allreduce); },
     [](const Config& f, Config* t) { t->hierarchical_allreduce = f.hierarchical_allreduce; }},
    {"STALL_CHECK_TIME_SECONDS",
     [](const Config& c) { return ShortestNumber(c.stall.check_seconds); },
     [](const Config& f, Config* t) { t->stall.check_seconds = f.stall.check_seconds; }},
    {"STALL_SHUTDOWN_TIME_SECONDS",
     [](const Config& c) { return ShortestNumber(c.stall.shutdown_seconds); },
     [](const Config& f, Config* t) { t->stall.shutdown_seconds = f.stall.shutdown_seconds; }},
    {"STALL_CHECK_DISABLE", [](const Config& c) { return Switch(!c.stall.enabled); },
     [](const Config& f, Config* t) { t->stall.enabled = f.stall.enabled; }},
    {"DYNAMIC_PROCESS_SETS", [](const Config& c) { return Switch(c.dynamic_process_sets); },
     [](const Config& f, Config* t) { t->dynamic_process_sets = f.dynamic_process_sets; }},
};

// What a rank sends: its build (BuildIdentity::Encode) on the first line, then
// "!<its parse error>", or one "<value>\n" per shared setting.
std::string Describe(const BuildIdentity& build, const Status& parsed, const Config& config) {
  std::string text = build.Encode() + "\n";
  if (!parsed.ok()) return text + "!" + parsed.message();
  for (const auto& setting : kShared) text += setting.value(config) + "\n";
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "<rank> on <host>: <build>" for every rank, when their builds differ; else empty.
// A rank whose first line is no build runs a horde from before builds were compared.
std::string BuildMismatch(const std::vector<std::string>& described) {
  std::vector<std::string> summaries;
  std::vector<std::string> hosts;
  for (const std::string& text : described) {
    BuildIdentity build;
    const bool known = BuildIdentity::Parse(text.substr(0, text.find('\n')), &build);
    summaries.push_back(known ? build.Summary() : "a horde too old to report its build");
    hosts.push_back(known ? build.host : "an unknown host");
  }
  bool same = true;
  for (const std::string& summary : summaries) same = same && summary == summaries[0];
  if (same) return "";
  std::string each;
  for (size_t r = 0; r < summaries.size(); ++r) {
    each += (each.empty() ? "" : "; ") + RankNames().One(static_cast<int>(r)) + " on " + hosts[r] +
            ": " + summaries[r];
  }
  return each;
}

// Rank 0's decision from every rank's description (its build line removed): "!<error>"
// when some rank's environment is malformed, else rank 0's values followed by one line
// per setting whose values differ, "<index> <value> on <ranks>; <value> on <ranks>".
std::string Decide(std::vector<std::string> described) {
  for (std::string& text : described) text.erase(0, text.find('\n') + 1);
  std::string errors;
  for (size_t r = 0; r < described.size(); ++r) {
    if (described[r].rfind("!", 0) == 0) {
      errors += (errors.empty() ? "" : "; ") + RankNames().One(static_cast<int>(r)) + ": " +
                described[r].substr(1);
    }
  }
  if (!errors.empty()) return "!" + errors;
  std::vector<std::vector<std::string>> values;
  for (const auto& text : described) values.push_back(Lines(text));
  std::string decision = described[0];
  for (size_t i = 0; i < std::size(kShared); ++i) {
    std::map<std::string, std::vector<int>> ranks_by_value;
    for (size_t r = 0; r < values.size(); ++r)
      ranks_by_value[values[r][i]].push_back(static_cast<int>(r));
    if (ranks_by_value.size() == 1) continue;
    std::string each;
    for (const auto& [value, ranks] : ranks_by_value) {
      each += (each.empty() ? "" : "; ") + value + " on " + RankNames().List(ranks);
    }
    decision += std::to_string(i) + " " + each + "\n";
  }
  return decision;
}

// Takes rank 0's values (the decision's first lines) into `config`, and logs the
// settings that differ where this rank's value is not rank 0's (rank 0 logs them all).
Status Apply(const std::string& decision, int rank, Config* config) {
  const std::vector<std::string> lines = Lines(decision);
  const size_t n = std::size(kShared);
  std::map<std::string, std::string> env;
  for (size_t i = 0; i < n; ++i) env[std::string("HORDE_") + kShared[i].suffix] = lines[i];
  Config rank0;
  HORDE_RETURN_IF_ERROR(Config::FromEnv(
      [&env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
      },
      &rank0));
  for (size_t l = n; l < lines.size(); ++l) {
    const size_t i = std::stoul(lines[l]);
    const SharedSetting& setting = kShared[i];
    if (rank == 0 || setting.value(*config) != lines[i]) {
      HORDE_LOG(kWarning) << "HORDE_" << setting.suffix << " differs across ranks ("
                          << lines[l].substr(lines[l].find(' ') + 1)
                          << "); every rank uses rank 0's value, " << lines[i]
                          << ": ranks with different values would not issue the same collectives";
    }
  }
  for (const auto& setting : kShared) setting.adopt(rank0, config);
  return Status::Ok();
}

}  // namespace

Status AgreeOnConfig(Transport* transport, const BuildIdentity& build, const Status& parsed,
                     Config* config) {
  std::vector<std::string> described;
  HORDE_RETURN_IF_ERROR(
      transport->GatherToCoordinator(Describe(build, parsed, *config), &described));
  std::string decision;
  if (transport->rank() == 0) {
    const std::string mismatch = BuildMismatch(described);
    decision = mismatch.empty() ? Decide(described) : kBuildMismatch + mismatch;
  }
  HORDE_RETURN_IF_ERROR(transport->BroadcastFromCoordinator(&decision));
  if (decision.rfind(kBuildMismatch, 0) == 0) {
    return Status::PreconditionError(
        "init() failed: the ranks run different horde builds, which cannot exchange messages (" +
        decision.substr(std::string(kBuildMismatch).size()) +
        "); install the same horde on every host");
  }
  if (!parsed.ok()) return parsed;
  if (decision.rfind("!", 0) == 0) {
    return Status::InvalidArgument("init() failed because another rank's settings are malformed: " +
                                   decision.substr(1));
  }
  return Apply(decision, transport->rank(), config);
}

}  // namespace horde
