#pragma once

#include <map>
#include <string>
#include <vector>

namespace horde {
namespace testing {

// A parsed JSON value, for tests that check files horde writes (the timeline).
struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool Has(const std::string& key) const { return object.count(key) > 0; }
  const JsonValue& At(const std::string& key) const { return object.at(key); }
};

// Parses `text` as one strict JSON document (RFC 8259: no trailing commas, no comments,
// nothing after the value but whitespace). Returns false with `error` naming the offset
// and what was expected there.
bool ParseJson(const std::string& text, JsonValue* value, std::string* error);

}  // namespace testing
}  // namespace horde
