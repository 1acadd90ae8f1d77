#include "core/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace horde {
namespace {

// Finds HORDE_<suffix>, else HOROVOD_<suffix>; reports which name supplied the value.
std::optional<std::string> Lookup(const EnvLookup& env, const std::string& suffix,
                                  std::string* source) {
  for (const char* prefix : {"HORDE_", "HOROVOD_"}) {
    *source = prefix + suffix;
    if (auto value = env(*source)) return value;
  }
  return std::nullopt;
}

Status Malformed(const std::string& var, const std::string& value, const std::string& expected) {
  return Status::InvalidArgument("invalid value '" + value + "' for " + var + ": expected " +
                                 expected);
}

Status ParseNonNegativeInt(const EnvLookup& env, const std::string& suffix, int64_t* out) {
  std::string var;
  auto value = Lookup(env, suffix, &var);
  if (!value) return Status::Ok();
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || errno == ERANGE || parsed < 0) {
    return Malformed(var, *value, "a non-negative integer");
  }
  *out = parsed;
  return Status::Ok();
}

enum class Bound { kPositive, kNonNegative };

Status ParseNumber(const EnvLookup& env, const std::string& suffix, Bound bound, double* out) {
  std::string var;
  auto value = Lookup(env, suffix, &var);
  if (!value) return Status::Ok();
  char* end = nullptr;
  double parsed = std::strtod(value->c_str(), &end);
  const bool positive = bound == Bound::kPositive;
  if (value->empty() || *end != '\0' || !std::isfinite(parsed) || parsed < 0 ||
      (positive && parsed == 0)) {
    return Malformed(var, *value, positive ? "a positive number" : "a non-negative number");
  }
  *out = parsed;
  return Status::Ok();
}

Status ParseSwitch(const EnvLookup& env, const std::string& suffix, bool* out) {
  std::string var;
  auto value = Lookup(env, suffix, &var);
  if (!value) return Status::Ok();
  if (*value != "0" && *value != "1") return Malformed(var, *value, "1 (on) or 0 (off)");
  *out = *value == "1";
  return Status::Ok();
}

Status ParseLevel(const EnvLookup& env, LogLevel* out) {
  std::string var;
  auto value = Lookup(env, "LOG_LEVEL", &var);
  if (!value) return Status::Ok();
  if (!ParseLogLevel(*value, out).ok()) {
    return Malformed(var, *value, "one of trace, debug, info, warning, error, fatal");
  }
  return Status::Ok();
}

Status ParseCpuOperations(const EnvLookup& env) {
  std::string var;
  auto value = Lookup(env, "CPU_OPERATIONS", &var);
  if (value && *value != "MPI" && *value != "mpi") {
    return Malformed(var, *value, "MPI (the only CPU backend this build has)");
  }
  return Status::Ok();
}

Status ParseGpuOperations(const EnvLookup& env, bool* nccl) {
  std::string var;
  auto value = Lookup(env, "GPU_OPERATIONS", &var);
  if (!value) return Status::Ok();
  if (*value == "NCCL" || *value == "nccl" || *value == "MPI" || *value == "mpi") {
    *nccl = *value == "NCCL" || *value == "nccl";
    return Status::Ok();
  }
  return Malformed(var, *value, "NCCL or MPI");
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Status Config::FromEnv(const EnvLookup& env, Config* config) {
  Config c;
  HORDE_RETURN_IF_ERROR(ParseNonNegativeInt(env, "FUSION_THRESHOLD", &c.fusion_threshold_bytes));
  HORDE_RETURN_IF_ERROR(ParseNumber(env, "CYCLE_TIME", Bound::kPositive, &c.cycle_time_ms));
  HORDE_RETURN_IF_ERROR(ParseNonNegativeInt(env, "CACHE_CAPACITY", &c.cache_capacity));
  std::string timeline_var;
  if (auto path = Lookup(env, "TIMELINE", &timeline_var)) c.timeline_path = *path;
  HORDE_RETURN_IF_ERROR(ParseSwitch(env, "TIMELINE_MARK_CYCLES", &c.timeline_mark_cycles));
  HORDE_RETURN_IF_ERROR(ParseSwitch(env, "AUTOTUNE", &c.autotune));
  std::string log_var;
  if (auto log = Lookup(env, "AUTOTUNE_LOG", &log_var)) c.autotune_log = *log;
  HORDE_RETURN_IF_ERROR(
      ParseNumber(env, "AUTOTUNE_SAMPLE_SECONDS", Bound::kPositive, &c.autotune_sample_seconds));
  HORDE_RETURN_IF_ERROR(ParseLevel(env, &c.log_level));
  HORDE_RETURN_IF_ERROR(ParseCpuOperations(env));
  HORDE_RETURN_IF_ERROR(ParseGpuOperations(env, &c.gpu_operations_nccl));
  HORDE_RETURN_IF_ERROR(ParseSwitch(env, "HIERARCHICAL_ALLREDUCE", &c.hierarchical_allreduce));
  HORDE_RETURN_IF_ERROR(
      ParseNumber(env, "STALL_CHECK_TIME_SECONDS", Bound::kPositive, &c.stall.check_seconds));
  HORDE_RETURN_IF_ERROR(ParseNumber(env, "STALL_SHUTDOWN_TIME_SECONDS", Bound::kNonNegative,
                                    &c.stall.shutdown_seconds));
  bool stall_check_disabled = false;
  HORDE_RETURN_IF_ERROR(ParseSwitch(env, "STALL_CHECK_DISABLE", &stall_check_disabled));
  c.stall.enabled = !stall_check_disabled;
  HORDE_RETURN_IF_ERROR(ParseSwitch(env, "DYNAMIC_PROCESS_SETS", &c.dynamic_process_sets));
  *config = c;
  return Status::Ok();
}

}  // namespace horde
