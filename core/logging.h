#pragma once

#include <sstream>
#include <string>

#include "horde/status.h"

namespace horde {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

Status ParseLogLevel(const std::string& text, LogLevel* level);
const char* LogLevelName(LogLevel level);

// Process-wide log settings, set once by init(). The one piece of global state besides
// the runtime pointer: log lines can come from any layer, and threading a logger through
// every constructor would buy nothing.
void SetLogLevel(LogLevel level);
void SetLogRank(int rank);
bool LogEnabled(LogLevel level);

// Collects one line and writes it to stderr, prefixed with the rank and level, when
// destroyed: HORDE_LOG(kWarning) << "message";
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Binds looser than <<, so the whole streamed expression is skipped when disabled.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

#define HORDE_LOG(level)                         \
  !::horde::LogEnabled(::horde::LogLevel::level) \
      ? (void)0                                  \
      : ::horde::LogVoidify() & ::horde::LogLine(::horde::LogLevel::level).stream()

}  // namespace horde
