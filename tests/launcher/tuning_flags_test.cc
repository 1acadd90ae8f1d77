// horderun's tuning flags, --help and --list-settings come from the settings table.
#include "launcher/tuning_flags.h"

#include <gtest/gtest.h>

#include <sstream>

#include "launcher/launcher_options.h"
#include "test_util.h"

namespace horde::launcher {
namespace {

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  return fields;
}

TEST(TuningFlags, EveryRowWithAFlagIsAFlagAndHelpListsIt) {
  const std::string help = HelpText();
  size_t flags = 0;
  for (const Setting& setting : Settings()) {
    if (setting.flag.name == nullptr) continue;
    ++flags;
    EXPECT_EQ(FindTuningFlag(setting.flag.name), &setting);
    const std::string usage = std::string(setting.flag.name) +
                              (*setting.flag.value_name ? " " : "") + setting.flag.value_name;
    EXPECT_NE(help.find("  " + usage + " "), std::string::npos) << usage;
    EXPECT_NE(help.find(setting.help), std::string::npos) << setting.help;
  }
  EXPECT_EQ(TuningFlags().size(), flags);
  EXPECT_EQ(FindTuningFlag("--no-such-flag"), nullptr);
}

TEST(TuningFlags, ValuesBecomeTheVariablesForm) {
  EXPECT_EQ(TuningValue(*FindTuningFlag("--fusion-threshold-mb"), "2"), "2097152");
  EXPECT_EQ(TuningValue(*FindTuningFlag("--cache-capacity"), "007"), "7");
  EXPECT_EQ(TuningValue(*FindTuningFlag("--cycle-time-ms"), "0.5"), "0.5");
  EXPECT_EQ(TuningValue(*FindTuningFlag("--autotune"), ""), "1");
  EXPECT_EQ(TuningValue(*FindTuningFlag("--log-level"), "info"), "info");
  EXPECT_EQ(TuningValue(*FindTuningFlag("--stall-shutdown-seconds"), "30"), "30");
  EXPECT_USAGE_ERROR(TuningValue(*FindTuningFlag("--log-level"), "INFO"),
                     "--log-level expects one of trace, debug, info, warning, error, fatal, "
                     "got 'INFO'");
  EXPECT_USAGE_ERROR(TuningValue(*FindTuningFlag("--stall-shutdown-seconds"), "0.5"),
                     "--stall-shutdown-seconds expects a non-negative integer, got '0.5'");
}

TEST(TuningFlags, ListingHasOneTabSeparatedLinePerSetting) {
  std::istringstream listing(SettingsListing());
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(listing, line);) lines.push_back(Fields(line));
  ASSERT_EQ(lines.size(), Settings().size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const Setting& setting = Settings()[i];
    ASSERT_EQ(lines[i].size(), 5u) << setting.name;
    EXPECT_EQ(lines[i][0], VariableName(setting));
    EXPECT_EQ(lines[i][1], DocumentedDefault(setting));
    EXPECT_EQ(lines[i][2], setting.scope == SettingScope::kShared ? "shared" : "per-rank");
    EXPECT_EQ(lines[i][3], setting.flag.name ? setting.flag.name : "-");
    EXPECT_EQ(lines[i][4], setting.help);
  }
  EXPECT_EQ(lines[0], (std::vector<std::string>{"HORDE_FUSION_THRESHOLD", "134217728", "shared",
                                                "--fusion-threshold-mb",
                                                "size of a fused buffer; 0 disables fusion"}));
}

TEST(TuningFlags, ListSettingsNeedsNoCommand) {
  EXPECT_TRUE(ParseOptions({"--list-settings"}).list_settings);
  EXPECT_NE(HelpText().find("--list-settings"), std::string::npos);
}

}  // namespace
}  // namespace horde::launcher
