#include "core/logging.h"

#include <atomic>
#include <iostream>

namespace horde {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<int> g_rank{-1};

}  // namespace

Status ParseLogLevel(const std::string& text, LogLevel* level) {
  static const struct {
    const char* name;
    LogLevel level;
  } kLevels[] = {{"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug},
                 {"info", LogLevel::kInfo},   {"warning", LogLevel::kWarning},
                 {"error", LogLevel::kError}, {"fatal", LogLevel::kFatal}};
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& l : kLevels) {
    if (lower == l.name) {
      *level = l.level;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("'" + text +
                                 "' is not a log level; expected one of trace, debug, info, "
                                 "warning, error, fatal");
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kFatal: return "FATAL";
  }
  return "?";
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
void SetLogRank(int rank) { g_rank = rank; }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

LogLine::~LogLine() {
  std::ostringstream line;
  line << "[horde";
  int rank = g_rank.load();
  if (rank >= 0) line << " rank " << rank;
  line << " " << LogLevelName(level_) << "] " << stream_.str() << "\n";
  std::cerr << line.str() << std::flush;
}

}  // namespace horde
