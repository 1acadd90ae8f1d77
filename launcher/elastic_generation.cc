#include "launcher/elastic_generation.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <system_error>

#include "launcher/child_process.h"
#include "launcher/job_runner.h"
#include "launcher/rank_exit.h"

namespace horde::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kGrace = std::chrono::seconds(10);

// mpirun's stderr, passed on to horderun's and read line by line for the failed rank.
class StderrTap {
 public:
  explicit StderrTap(int fd) : fd_(fd) {}
  ~StderrTap() {
    if (fd_ >= 0) close(fd_);
  }

  // Waits up to `timeout` for output and passes it on.
  void Pump(std::chrono::milliseconds timeout) {
    if (fd_ < 0) return void(poll(nullptr, 0, static_cast<int>(timeout.count())));
    pollfd entry{fd_, POLLIN, 0};
    if (poll(&entry, 1, static_cast<int>(timeout.count())) <= 0) return;
    char buffer[4096];
    ssize_t n = read(fd_, buffer, sizeof(buffer));
    if (n <= 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t written = write(STDERR_FILENO, buffer + done, n - done);
      if (written <= 0) break;
      done += written;
    }
    Scan(std::string(buffer, n));
  }

  // What is left once mpirun has exited; bounded, in case a process it started still
  // holds the pipe.
  void Drain() {
    auto deadline = Clock::now() + std::chrono::seconds(2);
    while (fd_ >= 0 && Clock::now() < deadline) Pump(std::chrono::milliseconds(100));
  }

  // The rank wrappers' lines are the record; mpirun's wording is the fallback.
  std::optional<int> failed_rank() const { return wrapper_rank_ ? wrapper_rank_ : mpirun_rank_; }

 private:
  void Scan(const std::string& text) {
    partial_ += text;
    size_t newline;
    while ((newline = partial_.find('\n')) != std::string::npos) {
      std::string line = partial_.substr(0, newline);
      if (!wrapper_rank_) wrapper_rank_ = FailedRankInExitLine(line);
      if (!mpirun_rank_) mpirun_rank_ = FailedRankIn(line);
      partial_.erase(0, newline + 1);
    }
    if (partial_.size() > 65536) partial_.clear();  // no line of mpirun's is that long
  }

  int fd_;
  std::string partial_;
  std::optional<int> wrapper_rank_;  // the first line of a rank's exit wrapper
  std::optional<int> mpirun_rank_;   // the first rank mpirun names
};

// Stops the job's process group with `signal`, then SIGKILL after the grace period.
int StopJob(pid_t pid, int signal, StderrTap& tap) {
  kill(-pid, signal);
  auto deadline = Clock::now() + kGrace;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    tap.Pump(std::chrono::milliseconds(100));
  }
  kill(-pid, SIGKILL);  // whatever of the group outlived mpirun
  return ExitCodeOf(status);
}

// A rank that had not yet installed horde's handler when SIGUSR1 came (still starting)
// dies of it: that is a reset we asked for, not a failure of its host.
GenerationEnd Ended(int status, const StderrTap& tap, bool update_sent) {
  GenerationEnd end;
  end.exit_code = ExitCodeOf(status);
  if (end.exit_code == 0) return end;
  end.failed_rank = tap.failed_rank();
  bool reset = end.exit_code == kResetExitCode || (update_sent && end.exit_code == 128 + SIGUSR1);
  end.kind = reset ? GenerationEnd::kReset : GenerationEnd::kRankFailed;
  return end;
}

}  // namespace

std::optional<int> FailedRankIn(const std::string& line) {
  // Open MPI 4 and 5: "mpirun noticed that process rank 2 with PID 7 on node vm exited on
  // signal 9 (Killed)." (5.0's prterun breaks the line after "exited on"); a non-zero
  // exit: "Process name: [[4711,1],3]" (4.x), "Process name: [prterun-vm-7@1,3]" (5.x).
  static const std::regex kPatterns[] = {
      std::regex(R"(process rank (\d{1,9}) with PID \d+ on node \S+ exited on( signal|\s*$))"),
      std::regex(R"(Process name: \[\[\d+,\d+\],(\d{1,9})\])"),
      std::regex(R"(Process name: \[[^\s,\[\]]+,(\d{1,9})\])"),
  };
  if (line.size() > 1000) return std::nullopt;
  std::smatch match;
  for (const std::regex& pattern : kPatterns) {
    if (std::regex_search(line, match, pattern)) return std::stoi(match[1].str());
  }
  return std::nullopt;
}

GenerationEnd RunGeneration(const std::string& program, const MpiCommand& command,
                            const sigset_t& signals, const sigset_t& old_mask,
                            std::chrono::milliseconds check_interval,
                            const std::function<bool()>& hosts_changed) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  pid_t pid;
  try {
    pid = StartJob(program, command, old_mask, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  StderrTap tap(fds[0]);
  auto next_check = Clock::now() + check_interval;
  bool update_sent = false;
  while (true) {
    tap.Pump(std::chrono::milliseconds(100));
    timespec no_wait{0, 0};
    int signal = sigtimedwait(&signals, nullptr, &no_wait);
    if (signal > 0 && signal != SIGCHLD) {
      GenerationEnd end{GenerationEnd::kStopped, StopJob(pid, signal, tap)};
      end.stop_signal = signal;
      return end;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      kill(-pid, SIGKILL);  // ranks mpirun left behind, if any
      tap.Drain();
      return Ended(status, tap, update_sent);
    }
    if (Clock::now() < next_check) continue;
    try {
      if (hosts_changed() && !update_sent) update_sent = kill(pid, SIGUSR1) == 0;
    } catch (const std::exception& error) {
      GenerationEnd end{GenerationEnd::kCheckFailed, StopJob(pid, SIGTERM, tap)};
      end.message = error.what();
      return end;
    }
    next_check = Clock::now() + check_interval;
  }
}

}  // namespace horde::launcher
