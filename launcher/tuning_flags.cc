#include "launcher/tuning_flags.h"

#include "launcher/numbers.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr long long kBytesPerMegabyte = 1 << 20;
const char* const kLogLevels[] = {"trace", "debug", "info", "warning", "error", "fatal"};

[[noreturn]] void Reject(const TuningFlag& flag, const std::string& value,
                         const std::string& expected) {
  throw UsageError(flag.flag + " expects " + expected + ", got '" + value + "'");
}

std::string CheckedLogLevel(const TuningFlag& flag, const std::string& value) {
  for (const char* level : kLogLevels) {
    if (value == level) return value;
  }
  Reject(flag, value, "one of trace, debug, info, warning, error, fatal");
}

}  // namespace

const std::vector<TuningFlag>& TuningFlags() {
  using Kind = TuningFlag::Kind;
  static const std::vector<TuningFlag> flags = {
      {"--fusion-threshold-mb", "HORDE_FUSION_THRESHOLD", Kind::kMegabytes, "MB",
       "MB per fused buffer; 0 disables fusion"},
      {"--cycle-time-ms", "HORDE_CYCLE_TIME", Kind::kPositiveNumber, "MS",
       "milliseconds between negotiation rounds"},
      {"--cache-capacity", "HORDE_CACHE_CAPACITY", Kind::kCount, "N",
       "response-cache entries; 0 disables the cache"},
      {"--timeline-filename", "HORDE_TIMELINE", Kind::kText, "FILE",
       "write a timeline to this file"},
      {"--timeline-mark-cycles", "HORDE_TIMELINE_MARK_CYCLES", Kind::kSwitch, "",
       "mark each negotiation round in the timeline"},
      {"--autotune", "HORDE_AUTOTUNE", Kind::kSwitch, "", "tune fusion and cycle time online"},
      {"--autotune-log-file", "HORDE_AUTOTUNE_LOG", Kind::kText, "FILE", "CSV log of autotuning"},
      {"--stall-check-seconds", "HORDE_STALL_CHECK_TIME_SECONDS", Kind::kPositiveNumber, "SECONDS",
       "warn about ranks that stall this long"},
      {"--stall-shutdown-seconds", "HORDE_STALL_SHUTDOWN_TIME_SECONDS", Kind::kCount, "SECONDS",
       "fail operations stalled this long; 0 never"},
      {"--hierarchical-allreduce", "HORDE_HIERARCHICAL_ALLREDUCE", Kind::kSwitch, "",
       "allreduce within nodes, then across them"},
      {"--log-level", "HORDE_LOG_LEVEL", Kind::kLogLevel, "LEVEL",
       "trace, debug, info, warning, error or fatal"},
  };
  return flags;
}

const TuningFlag* FindTuningFlag(const std::string& flag) {
  for (const TuningFlag& candidate : TuningFlags()) {
    if (candidate.flag == flag) return &candidate;
  }
  return nullptr;
}

std::string TuningValue(const TuningFlag& flag, const std::string& value) {
  switch (flag.kind) {
    case TuningFlag::Kind::kSwitch: return "1";
    case TuningFlag::Kind::kMegabytes: {
      auto megabytes = ParseNonNegativeInteger(value, (1LL << 62) / kBytesPerMegabyte);
      if (!megabytes) Reject(flag, value, "a non-negative whole number of MB");
      return std::to_string(*megabytes * kBytesPerMegabyte);
    }
    case TuningFlag::Kind::kCount: {
      auto count = ParseNonNegativeInteger(value, 1LL << 62);
      if (!count) Reject(flag, value, "a non-negative integer");
      return std::to_string(*count);
    }
    case TuningFlag::Kind::kPositiveNumber:
      if (!ParsePositiveNumber(value)) Reject(flag, value, "a positive number");
      return value;
    case TuningFlag::Kind::kText:
      if (value.empty()) Reject(flag, value, "a file name");
      return value;
    case TuningFlag::Kind::kLogLevel: return CheckedLogLevel(flag, value);
  }
  return value;
}

}  // namespace horde::launcher
