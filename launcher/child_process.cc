#include "launcher/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <system_error>

namespace horde::launcher {
namespace {

constexpr size_t kMaxOutput = 1 << 20;

bool IsExecutableFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

[[noreturn]] void ThrowErrno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// What horderun blocks (the signals its loop waits for) or ignores must not reach the
// programs it runs: a discovery script or ssh that cannot be interrupted would outlive
// its timeout's SIGKILL only by luck. sigaction and sigprocmask are async-signal-safe.
void DefaultSignals() {
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// In the child between fork() and exec(): async-signal-safe calls only, since other
// threads may hold locks (RunCaptured runs on several threads at once).
[[noreturn]] void ExecCaptured(char* const* argv, int output_fd, int error_fd) {
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(output_fd, STDOUT_FILENO) < 0 ||
      dup2(error_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  setpgid(0, 0);  // its own group, so a timeout also stops whatever it started
  DefaultSignals();
  execv(argv[0], argv);
  _exit(127);
}

void KillGroup(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  // in case it had not yet made its group
}

// A pipe whose ends close on exec, so a child started by another thread does not hold it.
void OpenPipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) ThrowErrno("pipe");
}

}  // namespace

std::string FindProgram(const std::string& name, const Environment& env) {
  if (name.find('/') != std::string::npos) return IsExecutableFile(name) ? name : "";
  auto path = env.find("PATH");
  std::stringstream dirs(path == env.end() ? "/usr/bin:/bin" : path->second);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

CapturedChild::CapturedChild(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout, bool stderr_apart)
    : deadline_(std::chrono::steady_clock::now() + timeout) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int output[2], error[2] = {-1, -1};
  OpenPipe(output);
  if (stderr_apart) {
    try {
      OpenPipe(error);
    } catch (...) {
      close(output[0]);
      close(output[1]);
      throw;
    }
  }
  pid_ = fork();
  if (pid_ == 0) ExecCaptured(args.data(), output[1], stderr_apart ? error[1] : output[1]);
  int fork_error = errno;
  for (int fd : {output[1], error[1]}) {
    if (fd >= 0) close(fd);
  }
  fds_[0] = output[0];
  fds_[1] = error[0];
  if (pid_ < 0) {
    errno = fork_error;
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
    ThrowErrno("fork");
  }
}

CapturedChild::~CapturedChild() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  if (pid_ > 0 && run_.exit_code < 0) {
    KillGroup(pid_);
    Reap(true);
  }
}

bool CapturedChild::Reap(bool block) {
  int status = 0;
  pid_t done;
  while ((done = waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (done != pid_) return false;
  run_.exit_code = ExitCodeOf(status);
  return true;
}

bool CapturedChild::Poll(std::chrono::milliseconds wait) {
  if (run_.exit_code >= 0) return true;
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline_) {
    run_.timed_out = true;
    KillGroup(pid_);
    return Reap(true);
  }
  wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now));
  pollfd entries[2];
  nfds_t count = 0;
  for (int fd : fds_) {
    if (fd >= 0) entries[count++] = pollfd{fd, POLLIN, 0};
  }
  if (count == 0) {  // all read: it has ended, or soon will
    if (Reap(false)) return true;
    poll(nullptr, 0, static_cast<int>(std::min<long>(wait.count(), 10)));
    return Reap(false);
  }
  if (poll(entries, count, static_cast<int>(wait.count())) <= 0) return false;
  for (nfds_t i = 0; i < count; ++i) {
    if (!entries[i].revents) continue;
    int& fd = fds_[0] == entries[i].fd ? fds_[0] : fds_[1];
    std::string& text = &fd == &fds_[0] ? run_.output : run_.error_output;
    char buffer[4096];
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      fd = -1;
      continue;
    }
    text.append(buffer, n);
    if (text.size() > kMaxOutput) text.erase(0, text.size() - kMaxOutput);
  }
  return false;
}

CapturedRun RunCaptured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                        bool stderr_apart) {
  CapturedChild child(argv, timeout, stderr_apart);
  while (!child.Poll(timeout)) {
  }
  return child.run();
}

std::string LastLine(const std::string& text) {
  std::stringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line)) {
    size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    last = line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
  }
  return last;
}

int ExitCodeOf(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace horde::launcher
