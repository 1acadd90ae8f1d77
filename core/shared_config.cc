#include "core/shared_config.h"

#include <map>
#include <sstream>
#include <vector>

#include "core/logging.h"
#include "core/rank_names.h"

namespace horde {
namespace {

// The decision's first characters when the builds differ (then the list of them).
constexpr char kBuildMismatch[] = "?builds ";

// What a rank sends: its build (BuildIdentity::Encode) on the first line, then
// "!<its parse error>", or one "<value>\n" per shared setting (core/settings.h).
std::string EncodeRankSettings(const BuildIdentity& build, const Status& parsed,
                               const Config& config) {
  std::string text = build.Encode() + "\n";
  if (!parsed.ok()) return text + "!" + parsed.message();
  for (const Setting* setting : SharedSettings()) text += SettingText(*setting, config) + "\n";
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
std::string BuildMismatch(const std::vector<std::string>& encoded) {
  std::vector<std::string> summaries;
  std::vector<std::string> hosts;
  for (const std::string& text : encoded) {
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

// Rank 0's decision from every rank's encoded settings (its build line removed): "!<error>"
// when some rank's environment is malformed, else rank 0's values followed by one line
// per setting whose values differ, "<index> <value> on <ranks>; <value> on <ranks>".
std::string Decide(std::vector<std::string> encoded) {
  for (std::string& text : encoded) text.erase(0, text.find('\n') + 1);
  std::string errors;
  for (size_t r = 0; r < encoded.size(); ++r) {
    if (encoded[r].rfind("!", 0) == 0) {
      errors += (errors.empty() ? "" : "; ") + RankNames().One(static_cast<int>(r)) + ": " +
                encoded[r].substr(1);
    }
  }
  if (!errors.empty()) return "!" + errors;
  std::vector<std::vector<std::string>> values;
  for (const auto& text : encoded) values.push_back(Lines(text));
  std::string decision = encoded[0];
  for (size_t i = 0; i < SharedSettings().size(); ++i) {
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
  const std::vector<const Setting*>& shared = SharedSettings();
  Config agreed = *config;
  for (size_t i = 0; i < shared.size(); ++i) {
    HORDE_RETURN_IF_ERROR(SetSetting(*shared[i], VariableName(*shared[i]), lines[i], &agreed));
  }
  for (size_t l = shared.size(); l < lines.size(); ++l) {
    const size_t i = std::stoul(lines[l]);
    if (rank == 0 || SettingText(*shared[i], *config) != lines[i]) {
      HORDE_LOG(kWarning) << VariableName(*shared[i]) << " differs across ranks ("
                          << lines[l].substr(lines[l].find(' ') + 1)
                          << "); every rank uses rank 0's value, " << lines[i]
                          << ": ranks with different values would not issue the same collectives";
    }
  }
  *config = agreed;
  return Status::Ok();
}

}  // namespace

Status AgreeOnConfig(Transport* transport, const BuildIdentity& build, const Status& parsed,
                     Config* config) {
  std::vector<std::string> encoded;
  HORDE_RETURN_IF_ERROR(
      transport->GatherToCoordinator(EncodeRankSettings(build, parsed, *config), &encoded));
  std::string decision;
  if (transport->rank() == 0) {
    const std::string mismatch = BuildMismatch(encoded);
    decision = mismatch.empty() ? Decide(encoded) : kBuildMismatch + mismatch;
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
