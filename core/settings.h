#pragma once

// The HORDE_* settings, one row each: the only place a setting's name, form, default,
// scope, horderun flag and help are written. Config::FromEnv parses from it,
// AgreeOnConfig (core/shared_config.h) shares its shared rows, and horderun derives its
// tuning flags, their --help lines and --list-settings from it. Plain data: horderun,
// which has no runtime, links it too.

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/logging.h"

namespace horde {

struct Config;

// What a value must look like (env variables and flags alike are checked against it).
enum class SettingForm {
  kByteCount,          // a non-negative integer of bytes
  kCount,              // a non-negative integer
  kPositiveNumber,     // a finite number above 0
  kNonNegativeNumber,  // a finite number, 0 or above
  kSwitch,             // 1 (on) or 0 (off)
  kChoice,             // one of the row's choices, as written or in lower case
  kLogLevel,           // trace, debug, info, warning, error or fatal, in any case
  kFileName,           // any text; empty: none
};

// kShared: every rank runs with rank 0's value, agreed at init(), because ranks whose
// values differ would issue different collectives. kPerRank: each rank keeps its own.
enum class SettingScope { kShared, kPerRank };

// How a horderun flag's value becomes the variable's.
enum class FlagUnit {
  kAsVariable,   // checked against the setting's form and passed on as it is
  kMegabytes,    // a whole number of MB, passed on as bytes
  kWholeNumber,  // a non-negative integer: narrower than a number-of-seconds variable
};

// The horderun flag that sets a row's variable for every rank; name nullptr: none.
struct SettingFlag {
  const char* name = nullptr;   // "--fusion-threshold-mb"
  const char* value_name = "";  // "MB" for --help; "" for a switch, which takes no value
  FlagUnit unit = FlagUnit::kAsVariable;
};
constexpr SettingFlag Flag(const char* name, const char* value_name = "",
                           FlagUnit unit = FlagUnit::kAsVariable) {
  return {name, value_name, unit};
}
constexpr SettingFlag kNoFlag = {};

// The Config field a row sets, reached by an accessor of the field's type; a checked
// value converts to the type (core/config.cc). A field whose shape is not its variable's
// (an inverted switch, a choice kept as a bool) converts itself with its own pair.
template <typename T>
struct FieldOf {
  T& (*of)(Config& config);
};
struct ConvertedField {
  void (*store)(const std::string& canonical_value, Config* config);  // checked already
  std::string (*text)(const Config& config);  // the value as the variable would be set
};
using SettingField = std::variant<std::monostate,  // checked only: nothing to store
                                  FieldOf<int64_t>, FieldOf<double>, FieldOf<bool>,
                                  FieldOf<std::string>, FieldOf<LogLevel>, ConvertedField>;

// `object`.*first.*rest...: a field of Config, or of a struct inside it.
template <typename Object, typename Member, typename... Rest>
auto& Reach(Object& object, Member first, Rest... rest) {
  if constexpr (sizeof...(rest) == 0) {
    return object.*first;
  } else {
    return Reach(object.*first, rest...);
  }
}

// Binds a row to a Config field by its members: BindField<&Config::cache_capacity>(), or
// BindField<&Config::stall, &StallSettings::check_seconds>() for one inside a struct.
template <auto... members>
SettingField BindField() {
  using T = std::remove_reference_t<decltype(Reach(std::declval<Config&>(), members...))>;
  return FieldOf<T>{[](Config& config) -> T& { return Reach(config, members...); }};
}

struct Setting {
  const char* name;  // after HORDE_; HOROVOD_<name> is read too, HORDE_ wins
  SettingForm form;
  const char* default_value;  // as the variable would be set; "" for none
  SettingScope scope;
  SettingField field;
  SettingFlag flag;
  const char* help;                       // one line, for horderun --help and --list-settings
  std::vector<std::string> choices = {};  // kChoice: the values, in their canonical case
  const char* choices_note = "";          // kChoice: said after them when one is malformed
};

// Every row, in the order Config::FromEnv reads them.
const std::vector<Setting>& Settings();

// The rows whose scope is kShared, in table order (the order ranks exchange them in).
const std::vector<const Setting*>& SharedSettings();

std::string VariableName(const Setting& setting);  // "HORDE_" + name

// What a malformed value's error says is expected, e.g. "a non-negative integer";
// empty for kFileName, which takes any text.
std::string ExpectedForm(const Setting& setting);

// The default as documented: the default value, or "none" when it is empty.
std::string DocumentedDefault(const Setting& setting);

// The log levels in order, as kLogLevel values are written.
const std::vector<std::string>& LogLevelNames();

}  // namespace horde
