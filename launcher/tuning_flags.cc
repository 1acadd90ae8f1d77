#include "launcher/tuning_flags.h"

#include <algorithm>
#include <cctype>

#include "launcher/numbers.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr long long kBytesPerMegabyte = 1 << 20;
constexpr long long kLargestInteger = 1LL << 62;

[[noreturn]] void Reject(const Setting& setting, const std::string& value,
                         const std::string& expected) {
  throw UsageError(std::string(setting.flag.name) + " expects " + expected + ", got '" + value +
                   "'");
}

std::string WholeNumber(const Setting& setting, const std::string& value) {
  auto number = ParseNonNegativeInteger(value, kLargestInteger);
  if (!number) Reject(setting, value, "a non-negative integer");
  return std::to_string(*number);
}

std::string Megabytes(const Setting& setting, const std::string& value) {
  auto megabytes = ParseNonNegativeInteger(value, kLargestInteger / kBytesPerMegabyte);
  if (!megabytes) Reject(setting, value, "a non-negative whole number of MB");
  return std::to_string(*megabytes * kBytesPerMegabyte);
}

// A plain decimal, 0 or above: the positive numbers, and zero written with digits and a
// point ("0", "0.0").
bool IsNonNegativeNumber(const std::string& value) {
  return ParsePositiveNumber(value) || (value.find('0') != std::string::npos &&
                                        value.find_first_not_of("0.") == std::string::npos &&
                                        std::count(value.begin(), value.end(), '.') <= 1);
}

// A choice as the table writes it, or in lower case; the log levels in lower case only.
std::string Chosen(const Setting& setting, const std::vector<std::string>& choices,
                   const std::string& value) {
  for (const std::string& choice : choices) {
    std::string lower = choice;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (value == choice || value == lower) return choice;
  }
  Reject(setting, value, ExpectedForm(setting));
}

// The value checked against the setting's form, as the variable takes it.
std::string AsVariable(const Setting& setting, const std::string& value) {
  switch (setting.form) {
    case SettingForm::kByteCount:
    case SettingForm::kCount: return WholeNumber(setting, value);
    case SettingForm::kPositiveNumber:
      if (!ParsePositiveNumber(value)) Reject(setting, value, ExpectedForm(setting));
      return value;
    case SettingForm::kNonNegativeNumber:
      if (!IsNonNegativeNumber(value)) Reject(setting, value, ExpectedForm(setting));
      return value;
    case SettingForm::kSwitch: return "1";
    case SettingForm::kChoice: return Chosen(setting, setting.choices, value);
    case SettingForm::kLogLevel: return Chosen(setting, LogLevelNames(), value);
    case SettingForm::kFileName:
      if (value.empty()) Reject(setting, value, "a file name");
      return value;
  }
  return value;
}

}  // namespace

std::vector<const Setting*> TuningFlags() {
  std::vector<const Setting*> flags;
  for (const Setting& setting : Settings()) {
    if (setting.flag.name != nullptr) flags.push_back(&setting);
  }
  return flags;
}

const Setting* FindTuningFlag(const std::string& flag) {
  for (const Setting* setting : TuningFlags()) {
    if (setting->flag.name == flag) return setting;
  }
  return nullptr;
}

std::string TuningValue(const Setting& setting, const std::string& value) {
  if (setting.form == SettingForm::kSwitch) return "1";
  switch (setting.flag.unit) {
    case FlagUnit::kAsVariable: return AsVariable(setting, value);
    case FlagUnit::kMegabytes: return Megabytes(setting, value);
    case FlagUnit::kWholeNumber: return WholeNumber(setting, value);
  }
  return value;
}

std::string SettingsListing() {
  std::string listing;
  for (const Setting& setting : Settings()) {
    const char* scope = setting.scope == SettingScope::kShared ? "shared" : "per-rank";
    const char* flag = setting.flag.name != nullptr ? setting.flag.name : "-";
    listing += VariableName(setting) + "\t" + DocumentedDefault(setting) + "\t" + scope + "\t" +
               flag + "\t" + setting.help + "\n";
  }
  return listing;
}

}  // namespace horde::launcher
