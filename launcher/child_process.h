#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/environment.h"

namespace horde::launcher {

// The executable that execvp() would run for `name`, searched on env's PATH; empty when
// there is none. A name with a '/' is taken as a path.
std::string FindProgram(const std::string& name, const Environment& env);

struct CapturedRun {
  int exit_code = -1;  // 128 + N when killed by signal N
  bool timed_out = false;
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] a path) with stdin from /dev/null and collects its output; after
// `timeout` it kills the program's process group. Safe to call from several threads.
// Throws std::system_error when it cannot start a process at all.
CapturedRun RunCaptured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// The last non-empty line of `text`, trimmed; for quoting a tool's error message.
std::string LastLine(const std::string& text);

// 128 + N for a process killed by signal N, else its exit code: what a shell reports.
int ExitCodeOf(int wait_status);

}  // namespace horde::launcher
