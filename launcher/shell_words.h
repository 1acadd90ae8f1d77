#pragma once

#include <string>
#include <vector>

namespace horde::launcher {

// Splits text into words the way a POSIX shell would (whitespace separates; single
// quotes, double quotes and backslashes protect), without expanding anything. Used for
// --mpi-args "...". Throws UsageError naming `what` on an unterminated quote.
std::vector<std::string> SplitShellWords(const std::string& text, const std::string& what);

// Quotes one word so a shell reads it back unchanged; plain words stay as they are.
std::string QuoteShellWord(const std::string& word);

// The words quoted and joined by spaces: a command line a user can paste.
std::string JoinShellWords(const std::vector<std::string>& words);

}  // namespace horde::launcher
