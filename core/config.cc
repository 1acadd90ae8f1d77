#include "core/config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/shortest_number.h"

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

bool IsNonNegativeInteger(const std::string& value) {
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value.c_str(), &end, 10);
  return !value.empty() && *end == '\0' && errno != ERANGE && parsed >= 0;
}

bool IsNumber(const std::string& value, bool zero_allowed) {
  char* end = nullptr;
  double parsed = std::strtod(value.c_str(), &end);
  return !value.empty() && *end == '\0' && std::isfinite(parsed) && parsed >= 0 &&
         (zero_allowed || parsed != 0);
}

std::string Lower(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// The value in its canonical form (a choice as the table writes it, a log level in lower
// case), or nullopt when it does not have the setting's form.
std::optional<std::string> Canonical(const Setting& setting, const std::string& value) {
  switch (setting.form) {
    case SettingForm::kByteCount:
    case SettingForm::kCount:
      if (IsNonNegativeInteger(value)) return value;
      break;
    case SettingForm::kPositiveNumber:
    case SettingForm::kNonNegativeNumber:
      if (IsNumber(value, setting.form == SettingForm::kNonNegativeNumber)) return value;
      break;
    case SettingForm::kSwitch:
      if (value == "0" || value == "1") return value;
      break;
    case SettingForm::kChoice:
      for (const std::string& choice : setting.choices) {
        if (value == choice || value == Lower(choice)) return choice;
      }
      break;
    case SettingForm::kLogLevel: {
      LogLevel level;
      if (ParseLogLevel(value, &level).ok()) return Lower(value);
      break;
    }
    case SettingForm::kFileName: return value;
  }
  return std::nullopt;
}

// Stores a canonical value in a field of its type.
struct Store {
  const std::string& value;
  Config* config;
  void operator()(std::monostate) const {}
  void operator()(FieldOf<int64_t> f) const {
    f.of(*config) = std::strtoll(value.c_str(), nullptr, 10);
  }
  void operator()(FieldOf<double> f) const { f.of(*config) = std::strtod(value.c_str(), nullptr); }
  void operator()(FieldOf<bool> f) const { f.of(*config) = value == "1"; }
  void operator()(FieldOf<std::string> f) const { f.of(*config) = value; }
  void operator()(FieldOf<LogLevel> f) const { ParseLogLevel(value, &f.of(*config)); }
  void operator()(ConvertedField f) const { f.store(value, config); }
};

// Writes a field of its type as its variable would be set. The accessors take a mutable
// Config because storing uses them too; here they only read.
struct Text {
  Config& config;
  std::string operator()(std::monostate) const { return ""; }
  std::string operator()(FieldOf<int64_t> f) const { return std::to_string(f.of(config)); }
  std::string operator()(FieldOf<double> f) const { return ShortestNumber(f.of(config)); }
  std::string operator()(FieldOf<bool> f) const { return f.of(config) ? "1" : "0"; }
  std::string operator()(FieldOf<std::string> f) const { return f.of(config); }
  std::string operator()(FieldOf<LogLevel> f) const {
    return LogLevelNames()[static_cast<size_t>(f.of(config))];
  }
  std::string operator()(ConvertedField f) const { return f.text(config); }
};

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Status SetSetting(const Setting& setting, const std::string& variable, const std::string& value,
                  Config* config) {
  const std::optional<std::string> canonical = Canonical(setting, value);
  if (!canonical) {
    return Status::InvalidArgument("invalid value '" + value + "' for " + variable + ": expected " +
                                   ExpectedForm(setting));
  }
  std::visit(Store{*canonical, config}, setting.field);
  return Status::Ok();
}

std::string SettingText(const Setting& setting, const Config& config) {
  return std::visit(Text{const_cast<Config&>(config)}, setting.field);
}

Status Config::FromEnv(const EnvLookup& env, Config* config) {
  Config c;
  for (const Setting& setting : Settings()) {
    std::string variable;
    if (auto value = Lookup(env, setting.name, &variable)) {
      HORDE_RETURN_IF_ERROR(SetSetting(setting, variable, *value, &c));
    }
  }
  *config = c;
  return Status::Ok();
}

}  // namespace horde
