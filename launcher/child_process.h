#pragma once

#include <sys/types.h>

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
  std::string output;        // stdout, and stderr too unless it was asked for apart
  std::string error_output;  // stderr, when asked for apart
};

// A program run with its output collected, polled without blocking: argv (argv[0] a
// path) runs in a process group of its own, with stdin from /dev/null, default signal
// dispositions and no signal blocked (whatever horderun blocks or ignores), and is
// killed, group and all, after `timeout` or when the object goes. Throws
// std::system_error when it cannot start a process at all.
class CapturedChild {
 public:
  CapturedChild(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                bool stderr_apart = false);
  ~CapturedChild();
  CapturedChild(const CapturedChild&) = delete;
  CapturedChild& operator=(const CapturedChild&) = delete;

  // Reads what the program wrote, waiting up to `wait` for more; true once it has ended
  // (or timed out and was killed) and run() is complete.
  bool Poll(std::chrono::milliseconds wait);
  const CapturedRun& run() const { return run_; }

 private:
  bool Reap(bool block);

  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};  // stdout, stderr (or -1 when it shares stdout's pipe)
  std::chrono::steady_clock::time_point deadline_;
  CapturedRun run_;
};

// Runs argv as CapturedChild does and waits for it. Safe to call from several threads.
CapturedRun RunCaptured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                        bool stderr_apart = false);

// The last non-empty line of `text`, trimmed; for quoting a tool's error message.
std::string LastLine(const std::string& text);

// 128 + N for a process killed by signal N, else its exit code: what a shell reports.
int ExitCodeOf(int wait_status);

}  // namespace horde::launcher
