#pragma once

#include <string>
#include <vector>

#include "core/settings.h"

namespace horde::launcher {

// horderun's tuning flags: the rows of the settings table (core/settings.h) that have a
// flag. Each sets its HORDE_* variable for every rank, with the value in the form the
// runtime reads (e.g. MB become bytes).
std::vector<const Setting*> TuningFlags();

// The setting whose flag is `flag`, or nullptr.
const Setting* FindTuningFlag(const std::string& flag);

// Checks a flag's value and returns the variable's value ("1" for a switch).
// Throws UsageError naming the flag and the expected form.
std::string TuningValue(const Setting& setting, const std::string& value);

// What horderun --list-settings prints: one line per setting, tab-separated: the
// variable, its default as documented, "shared" or "per-rank", its flag or "-", its help.
std::string SettingsListing();

}  // namespace horde::launcher
