#pragma once

#include <string>
#include <vector>

namespace horde::launcher {

// A flag that tunes the runtime: horderun turns it into a HORDE_* variable that every
// rank gets, with the value in the form the runtime reads (e.g. MB become bytes).
struct TuningFlag {
  enum class Kind { kSwitch, kMegabytes, kCount, kPositiveNumber, kText, kLogLevel };
  std::string flag;      // "--cycle-time-ms"
  std::string env_name;  // "HORDE_CYCLE_TIME"
  Kind kind;
  std::string value_name;  // for --help: "MB"; empty for a switch
  std::string help;        // one line for --help
};

const std::vector<TuningFlag>& TuningFlags();

// The flag named `flag`, or nullptr.
const TuningFlag* FindTuningFlag(const std::string& flag);

// Checks a flag's value and returns the variable's value ("1" for a switch).
// Throws UsageError naming the flag and the expected form.
std::string TuningValue(const TuningFlag& flag, const std::string& value);

}  // namespace horde::launcher
