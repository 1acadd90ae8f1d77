#pragma once

#include <string>
#include <vector>

namespace horde {

// "a, b, c" from {"a", "b", "c"} and ", ": lists in messages.
inline std::string JoinedWords(const std::vector<std::string>& words,
                               const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) text += (i == 0 ? "" : separator) + words[i];
  return text;
}

}  // namespace horde
