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

// In the child between fork() and exec(): async-signal-safe calls only, since other
// threads may hold locks (RunCaptured runs on several threads at once).
[[noreturn]] void ExecCaptured(char* const* argv, int output_fd) {
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(output_fd, STDOUT_FILENO) < 0 ||
      dup2(output_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  setpgid(0, 0);  // its own group, so a timeout also stops whatever it started
  execv(argv[0], argv);
  _exit(127);
}

void KillGroup(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  // in case it had not yet made its group
}

// Reads until end of file or the deadline; returns false at the deadline.
bool ReadUntil(int fd, std::chrono::steady_clock::time_point deadline, std::string* output) {
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd entry{fd, POLLIN, 0};
    int ready = poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // loops back to the deadline check
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    output->append(buffer, n);
    if (output->size() > kMaxOutput) output->erase(0, output->size() - kMaxOutput);
  }
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) ThrowErrno("waitpid");
  }
  return status;
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

CapturedRun RunCaptured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  // Close-on-exec, so a child started by another thread does not hold our pipe open.
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) ThrowErrno("pipe");
  pid_t pid = fork();
  if (pid < 0) ThrowErrno("fork");
  if (pid == 0) ExecCaptured(args.data(), pipe_fds[1]);
  close(pipe_fds[1]);
  CapturedRun run;
  run.timed_out = !ReadUntil(pipe_fds[0], std::chrono::steady_clock::now() + timeout, &run.output);
  if (run.timed_out) KillGroup(pid);
  close(pipe_fds[0]);
  run.exit_code = ExitCodeOf(WaitFor(pid));
  return run;
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
