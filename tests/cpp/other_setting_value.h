#pragma once

#include <string>

#include "core/settings.h"

namespace horde::testing {

// A well-formed value of the setting that is not its default ("" for a setting with no
// other value, such as a choice of one).
inline std::string OtherSettingValue(const Setting& setting) {
  const std::string fallback = setting.default_value;
  switch (setting.form) {
    case SettingForm::kByteCount:
    case SettingForm::kCount: return fallback == "7" ? "8" : "7";
    case SettingForm::kPositiveNumber:
    case SettingForm::kNonNegativeNumber: return fallback == "2.5" ? "3.5" : "2.5";
    case SettingForm::kSwitch: return fallback == "1" ? "0" : "1";
    case SettingForm::kChoice:
      for (const std::string& choice : setting.choices) {
        if (choice != fallback) return choice;
      }
      return "";
    case SettingForm::kLogLevel: return fallback == "error" ? "debug" : "error";
    case SettingForm::kFileName: return "/tmp/other-" + std::string(setting.name);
  }
  return "";
}

}  // namespace horde::testing
