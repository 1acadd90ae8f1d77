#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/logging.h"
#include "core/settings.h"
#include "horde/status.h"

namespace horde {

// Looks up an environment variable; returns nullopt when unset. Injected so tests can
// parse configurations without touching the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// When the coordinator reports, and fails, operations that some ranks have submitted
// and others have not (see core/stall_inspector.h).
struct StallSettings {
  bool enabled = true;            // HORDE_STALL_CHECK_DISABLE=1 turns reports and failures off
  double check_seconds = 60.0;    // report names stalled this long
  double shutdown_seconds = 0.0;  // fail names stalled this long; 0: never
};

// HORDE_CALL_SITES: which of a rank's submissions carry where its Python program made
// them (torch_plugin/call_site.h), for stall reports and mismatch errors.
enum class CallSiteMode {
  kFirst,   // unnamed operations, and each name's first submission on this rank
  kAlways,  // every submission
  kOff,     // none
};

// Runtime settings, read once at init() from the HORDE_* variables of the settings table
// (core/settings.cc; HOROVOD_* accepted as aliases, the HORDE_ name wins). A malformed
// value is an error naming the variable and the expected form, never a silent default.
// The defaults here are the table's (a test compares them).
struct Config {
  int64_t fusion_threshold_bytes = 128 * 1024 * 1024;
  // The heartbeat: how long a rank with nothing pending waits before a round (it grows
  // while the runtime stays idle). Queued work starts a round at once.
  double cycle_time_ms = 1.0;
  int64_t cache_capacity = 1024;  // response-cache entries; 0 disables the fast path
  // HORDE_TIMELINE: the file rank 0 records a timeline to from init(); empty: none;
  // "DYNAMIC": none until start_timeline().
  std::string timeline_path;
  bool timeline_mark_cycles = false;
  // HORDE_GPU_OPERATIONS=NCCL (default) or MPI: MPI stages GPU tensors through host memory.
  bool gpu_operations_nccl = true;
  // HORDE_HIERARCHICAL_ALLREDUCE=1: NCCL within the node, MPI across nodes.
  bool hierarchical_allreduce = false;
  bool autotune = false;               // HORDE_AUTOTUNE
  std::string autotune_log;            // HORDE_AUTOTUNE_LOG: CSV of every sample
  double autotune_sample_seconds = 2;  // HORDE_AUTOTUNE_SAMPLE_SECONDS
  LogLevel log_level = LogLevel::kWarning;
  StallSettings stall;
  // HORDE_DYNAMIC_PROCESS_SETS: process sets may be added and removed after init(), as
  // Horovod's HOROVOD_DYNAMIC_PROCESS_SETS allows.
  bool dynamic_process_sets = false;
  // HORDE_STRAGGLER_REPORT: rank 0 logs the straggler report (core/straggler_watch.h).
  bool straggler_report = true;
  CallSiteMode call_sites = CallSiteMode::kFirst;
  // HORDE_TOPOLOGY: "auto" measures the links between hosts at init (jobs of more than one
  // host) and plans spanning trees over them; "off"; anything else is a link matrix file.
  std::string topology = "auto";

  static Status FromEnv(const EnvLookup& env, Config* config);
};

// Checks `value` of `variable` (the setting's HORDE_ or HOROVOD_ name) against the
// setting's form and stores it in the setting's field of `config`; a malformed value
// leaves `config` as it was.
Status SetSetting(const Setting& setting, const std::string& variable, const std::string& value,
                  Config* config);

// The setting's field in `config`, as the variable would be set ("134217728", "0.5",
// "NCCL"); empty for a setting that is only checked.
std::string SettingText(const Setting& setting, const Config& config);

}  // namespace horde
