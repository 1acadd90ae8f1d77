#include "tests/cpp/json_reader.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace horde {
namespace testing {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  bool Document(JsonValue* value) {
    if (!Value(value)) return false;
    SkipSpace();
    return pos_ == text_.size() || Fail("the end of the document");
  }

  std::string error() const { return error_; }

 private:
  bool Fail(const char* expected) {
    if (error_.empty()) error_ = "at offset " + std::to_string(pos_) + ": expected " + expected;
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) != nullptr) ++pos_;
  }

  bool Consume(const char* word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  bool Value(JsonValue* value) {
    SkipSpace();
    if (pos_ == text_.size()) return Fail("a value");
    char c = text_[pos_];
    if (c == '{') return Object(value);
    if (c == '[') return Array(value);
    if (c == '"') {
      value->type = JsonValue::Type::kString;
      return String(&value->string);
    }
    for (bool word : {true, false}) {
      if (Consume(word ? "true" : "false")) {
        value->type = JsonValue::Type::kBool;
        value->boolean = word;
        return true;
      }
    }
    if (Consume("null")) return true;
    return Number(value);
  }

  bool Number(JsonValue* value) {
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ == text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      pos_ = start;
      return Fail("a value");
    }
    while (pos_ < text_.size() && std::strchr("0123456789.eE+-", text_[pos_]) != nullptr) ++pos_;
    std::string digits = text_.substr(start, pos_ - start);
    char* end = nullptr;
    value->type = JsonValue::Type::kNumber;
    value->number = std::strtod(digits.c_str(), &end);
    return *end == '\0' || Fail("a number");
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) return Fail("no control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ == text_.size()) break;
      char e = text_[pos_++];
      const char* simple = std::strchr("\"\\/bfnrt", e);
      if (simple != nullptr && e != '\0') {
        out->push_back("\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
      } else if (e == 'u' && pos_ + 4 <= text_.size()) {
        long code = std::strtol(text_.substr(pos_, 4).c_str(), nullptr, 16);
        pos_ += 4;
        if (code >= 0x80) return Fail("\\u escapes of ASCII only (enough for these tests)");
        out->push_back(static_cast<char>(code));
      } else {
        return Fail("a valid escape");
      }
    }
    if (pos_ == text_.size()) return Fail("a closing quote");
    ++pos_;
    return true;
  }

  bool Array(JsonValue* value) {
    value->type = JsonValue::Type::kArray;
    ++pos_;
    SkipSpace();
    if (Consume("]")) return true;
    while (true) {
      value->array.emplace_back();
      if (!Value(&value->array.back())) return false;
      SkipSpace();
      if (Consume("]")) return true;
      if (!Consume(",")) return Fail("',' or ']'");
    }
  }

  bool Object(JsonValue* value) {
    value->type = JsonValue::Type::kObject;
    ++pos_;
    SkipSpace();
    if (Consume("}")) return true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ == text_.size() || text_[pos_] != '"' || !String(&key)) return Fail("a key");
      SkipSpace();
      if (!Consume(":")) return Fail("':'");
      if (!Value(&value->object[key])) return false;
      SkipSpace();
      if (Consume("}")) return true;
      if (!Consume(",")) return Fail("',' or '}'");
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

bool ParseJson(const std::string& text, JsonValue* value, std::string* error) {
  Parser parser(text);
  *value = JsonValue();
  if (parser.Document(value)) return true;
  *error = parser.error();
  return false;
}

}  // namespace testing
}  // namespace horde
