#include "core/settings.h"

#include "core/config.h"
#include "core/joined_words.h"

namespace horde {
namespace {

constexpr SettingScope kShared = SettingScope::kShared;
constexpr SettingScope kPerRank = SettingScope::kPerRank;

CallSiteMode CallSiteModeOf(const std::string& choice) {
  if (choice == "always") return CallSiteMode::kAlways;
  return choice == "off" ? CallSiteMode::kOff : CallSiteMode::kFirst;
}

std::string CallSiteModeText(const Config& config) {
  switch (config.call_sites) {
    case CallSiteMode::kAlways: return "always";
    case CallSiteMode::kOff: return "off";
    case CallSiteMode::kFirst: break;
  }
  return "first";
}

// One row per setting, in the order Config::FromEnv reads them. A shared row says why
// ranks must agree on it.
std::vector<Setting> MakeSettings() {
  using Form = SettingForm;
  return {
      // Shared: what the fast path fuses is computed by every rank alone.
      {"FUSION_THRESHOLD", Form::kByteCount, "134217728", kShared,
       BindField<&Config::fusion_threshold_bytes>(),
       Flag("--fusion-threshold-mb", "MB", FlagUnit::kMegabytes),
       "size of a fused buffer; 0 disables fusion"},
      // Shared: autotune's choices index candidates built from the configured values.
      {"CYCLE_TIME", Form::kPositiveNumber, "1", kShared, BindField<&Config::cycle_time_ms>(),
       Flag("--cycle-time-ms", "MS"), "milliseconds between negotiation rounds"},
      // Shared: where a cached response sits is computed by every rank alone.
      {"CACHE_CAPACITY", Form::kCount, "1024", kShared, BindField<&Config::cache_capacity>(),
       Flag("--cache-capacity", "N"), "response-cache entries; 0 disables the cache"},
      // Per rank, like the timeline's and autotune's other settings: only rank 0 uses them.
      {"TIMELINE", Form::kFileName, "", kPerRank, BindField<&Config::timeline_path>(),
       Flag("--timeline-filename", "FILE"), "write a timeline to this file"},
      {"TIMELINE_MARK_CYCLES", Form::kSwitch, "0", kPerRank,
       BindField<&Config::timeline_mark_cycles>(), Flag("--timeline-mark-cycles"),
       "mark each negotiation round in the timeline"},
      // Shared: only ranks that autotune apply rank 0's choice.
      {"AUTOTUNE", Form::kSwitch, "0", kShared, BindField<&Config::autotune>(), Flag("--autotune"),
       "tune fusion and cycle time online"},
      {"AUTOTUNE_LOG", Form::kFileName, "", kPerRank, BindField<&Config::autotune_log>(),
       Flag("--autotune-log-file", "FILE"), "CSV log of autotuning"},
      {"AUTOTUNE_SAMPLE_SECONDS", Form::kPositiveNumber, "2", kPerRank,
       BindField<&Config::autotune_sample_seconds>(), kNoFlag,
       "seconds of training per autotune sample"},
      {"LOG_LEVEL", Form::kLogLevel, "warning", kPerRank, BindField<&Config::log_level>(),
       Flag("--log-level", "LEVEL"), "trace, debug, info, warning, error or fatal"},
      // Checked only: this build has one CPU backend.
      {"CPU_OPERATIONS",
       Form::kChoice,
       "MPI",
       kPerRank,
       std::monostate(),
       kNoFlag,
       "the CPU backend (MPI is the only one)",
       {"MPI"},
       "the only CPU backend this build has"},
      // Shared: NCCL against MPI. The field keeps the choice as a bool.
      {"GPU_OPERATIONS",
       Form::kChoice,
       "NCCL",
       kShared,
       ConvertedField{
           [](const std::string& v, Config* c) { c->gpu_operations_nccl = v == "NCCL"; },
           [](const Config& c) -> std::string { return c.gpu_operations_nccl ? "NCCL" : "MPI"; }},
       kNoFlag,
       "NCCL, or MPI: GPU tensors staged through host memory",
       {"NCCL", "MPI"}},
      // Shared: one allreduce algorithm against another.
      {"HIERARCHICAL_ALLREDUCE", Form::kSwitch, "0", kShared,
       BindField<&Config::hierarchical_allreduce>(), Flag("--hierarchical-allreduce"),
       "allreduce within nodes, then across them"},
      // Shared, like the two below: when each rank sends its waiting cached requests to
      // the coordinator, whose stall inspector must see them before a limit.
      {"STALL_CHECK_TIME_SECONDS", Form::kPositiveNumber, "60", kShared,
       BindField<&Config::stall, &StallSettings::check_seconds>(),
       Flag("--stall-check-seconds", "SECONDS"), "warn about ranks that stall this long"},
      {"STALL_SHUTDOWN_TIME_SECONDS", Form::kNonNegativeNumber, "0", kShared,
       BindField<&Config::stall, &StallSettings::shutdown_seconds>(),
       Flag("--stall-shutdown-seconds", "SECONDS", FlagUnit::kWholeNumber),
       "fail operations stalled this long; 0 never"},
      // The field says the opposite of the variable: enabled unless disabled.
      {"STALL_CHECK_DISABLE", Form::kSwitch, "0", kShared,
       ConvertedField{[](const std::string& v, Config* c) { c->stall.enabled = v != "1"; },
                      [](const Config& c) -> std::string { return c.stall.enabled ? "0" : "1"; }},
       kNoFlag, "1 turns stall reports and failures off"},
      // Shared: a rank that refused add_process_set() would leave the others inside a
      // collective.
      {"DYNAMIC_PROCESS_SETS", Form::kSwitch, "0", kShared,
       BindField<&Config::dynamic_process_sets>(), kNoFlag,
       "1 allows adding and removing process sets after init()"},
      // Per rank: only rank 0 logs the report (every rank exchanges its waits either way).
      {"STRAGGLER_REPORT", Form::kSwitch, "1", kPerRank, BindField<&Config::straggler_report>(),
       kNoFlag, "1 logs (info) the rank the others wait for, at most once a minute"},
      // Per rank: a call site only describes a request, and each rank names its own.
      {"CALL_SITES",
       Form::kChoice,
       "first",
       kPerRank,
       ConvertedField{[](const std::string& v, Config* c) { c->call_sites = CallSiteModeOf(v); },
                      [](const Config& c) -> std::string { return CallSiteModeText(c); }},
       kNoFlag,
       "where stall and mismatch messages say Python called an operation: first "
       "(unnamed ones and each name's first call), always, or off",
       {"first", "always", "off"}},
      // Shared: measuring the links is collective, and every rank plans the same trees.
      {"TOPOLOGY", Form::kFileName, "auto", kShared, BindField<&Config::topology>(),
       Flag("--topology", "auto|off|FILE"),
       "auto: measure the links between hosts and use spanning trees where they are faster; "
       "off; or a link matrix file"},
  };
}

}  // namespace

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> settings = MakeSettings();
  return settings;
}

const std::vector<const Setting*>& SharedSettings() {
  static const std::vector<const Setting*> shared = [] {
    std::vector<const Setting*> rows;
    for (const Setting& setting : Settings()) {
      if (setting.scope == SettingScope::kShared) rows.push_back(&setting);
    }
    return rows;
  }();
  return shared;
}

std::string VariableName(const Setting& setting) { return std::string("HORDE_") + setting.name; }

std::string ExpectedForm(const Setting& setting) {
  switch (setting.form) {
    case SettingForm::kByteCount:
    case SettingForm::kCount: return "a non-negative integer";
    case SettingForm::kPositiveNumber: return "a positive number";
    case SettingForm::kNonNegativeNumber: return "a non-negative number";
    case SettingForm::kSwitch: return "1 (on) or 0 (off)";
    case SettingForm::kChoice: {
      const std::string note = setting.choices_note;
      return JoinedWords(setting.choices, " or ") + (note.empty() ? "" : " (" + note + ")");
    }
    case SettingForm::kLogLevel: return "one of " + JoinedWords(LogLevelNames(), ", ");
    case SettingForm::kFileName: return "";
  }
  return "";
}

std::string DocumentedDefault(const Setting& setting) {
  const std::string value = setting.default_value;
  return value.empty() ? "none" : value;
}

const std::vector<std::string>& LogLevelNames() {
  static const std::vector<std::string> names = {"trace",   "debug", "info",
                                                 "warning", "error", "fatal"};
  return names;
}

}  // namespace horde
