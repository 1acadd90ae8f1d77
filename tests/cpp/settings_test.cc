// The settings table's own rules (core/settings.h): what every row must hold so that
// Config::FromEnv, the init-time agreement and horderun can all be derived from it.
#include "core/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <variant>

namespace horde {
namespace {

TEST(Settings, NamesAndFlagsAreUnique) {
  std::set<std::string> names, flags;
  for (const Setting& setting : Settings()) {
    EXPECT_TRUE(names.insert(setting.name).second) << setting.name;
    if (setting.flag.name != nullptr) {
      EXPECT_TRUE(flags.insert(setting.flag.name).second) << setting.flag.name;
    }
  }
}

TEST(Settings, EveryRowHasAOneLineHelpAndAWellFormedFlag) {
  for (const Setting& setting : Settings()) {
    const std::string help = setting.help;
    EXPECT_FALSE(help.empty()) << setting.name;
    EXPECT_EQ(help.find_first_of("\t\n"), std::string::npos) << setting.name;
    if (setting.flag.name == nullptr) continue;
    const std::string flag = setting.flag.name;
    EXPECT_EQ(flag.rfind("--", 0), 0u) << flag;
    // A switch takes no value; every other flag names its value for --help.
    const bool takes_value = setting.form != SettingForm::kSwitch;
    EXPECT_EQ(std::string(setting.flag.value_name).empty(), !takes_value) << flag;
  }
}

TEST(Settings, ChoicesAreListedAndTheDefaultIsOne) {
  for (const Setting& setting : Settings()) {
    if (setting.form != SettingForm::kChoice) {
      EXPECT_TRUE(setting.choices.empty()) << setting.name;
      continue;
    }
    const auto& choices = setting.choices;
    EXPECT_NE(std::find(choices.begin(), choices.end(), setting.default_value), choices.end())
        << setting.name;
  }
}

TEST(Settings, EverySharedSettingHasAFieldToAgreeOn) {
  for (const Setting* setting : SharedSettings()) {
    EXPECT_FALSE(std::holds_alternative<std::monostate>(setting->field)) << setting->name;
  }
}

TEST(Settings, SharedSettingsAreTheSharedRowsInTableOrder) {
  std::vector<std::string> shared;
  for (const Setting* setting : SharedSettings()) shared.push_back(setting->name);
  EXPECT_EQ(shared,
            (std::vector<std::string>{"FUSION_THRESHOLD", "CYCLE_TIME", "CACHE_CAPACITY",
                                      "AUTOTUNE", "GPU_OPERATIONS", "HIERARCHICAL_ALLREDUCE",
                                      "STALL_CHECK_TIME_SECONDS", "STALL_SHUTDOWN_TIME_SECONDS",
                                      "STALL_CHECK_DISABLE", "DYNAMIC_PROCESS_SETS", "TOPOLOGY"}));
}

TEST(Settings, VariableNamesAndDocumentedDefaults) {
  const Setting& fusion = Settings().front();
  EXPECT_EQ(VariableName(fusion), "HORDE_FUSION_THRESHOLD");
  EXPECT_EQ(DocumentedDefault(fusion), "134217728");
  const Setting& timeline = Settings()[3];
  ASSERT_STREQ(timeline.name, "TIMELINE");
  EXPECT_EQ(DocumentedDefault(timeline), "none");
}

}  // namespace
}  // namespace horde
