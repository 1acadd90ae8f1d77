#include "launcher/shell_words.h"

#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Inside double quotes a backslash escapes only these, as in sh.
bool EscapableInDoubleQuotes(char c) { return c == '"' || c == '\\' || c == '$' || c == '`'; }

}  // namespace

std::vector<std::string> SplitShellWords(const std::string& text, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && EscapableInDoubleQuotes(text[i + 1])) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (IsSpace(c)) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      in_word = true;
      if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '\\' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    }
  }
  if (quote != 0) {
    throw UsageError(what + " has an unterminated " + std::string(1, quote) +
                     " quote: close it, e.g. " + what + " \"--mca btl tcp,self\"");
  }
  if (in_word) words.push_back(word);
  return words;
}

std::string QuoteShellWord(const std::string& word) {
  static const std::string kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%^";
  if (!word.empty() && word.find_first_not_of(kSafe) == std::string::npos) return word;
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string JoinShellWords(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    line += QuoteShellWord(word);
  }
  return line;
}

}  // namespace horde::launcher
