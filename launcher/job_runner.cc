#include "launcher/job_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <system_error>

#include "launcher/child_process.h"
#include "launcher/environment.h"

namespace horde::launcher {
namespace {

constexpr int kGraceSeconds = 10;

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// mpirun gets its own process group so that horderun decides what reaches it: a
// terminal's Ctrl-C goes to horderun, which passes it on once (Open MPI takes a second
// SIGINT as "abort at once", leaving ranks behind). A process outside the terminal's
// foreground group must not read the terminal, so mpirun reads /dev/null instead there.
[[noreturn]] void ExecJob(const char* program, char* const* argv, char* const* envp,
                          const sigset_t& old_mask, pid_t launcher, int stderr_fd) {
  setpgid(0, 0);
  if (stderr_fd >= 0 && dup2(stderr_fd, STDERR_FILENO) < 0) _exit(127);
  // Should horderun itself be killed (SIGKILL cannot be passed on), mpirun is stopped too.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(128 + SIGTERM);
  if (isatty(STDIN_FILENO)) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  execve(program, argv, envp);
  _exit(127);
}

// Waits for the job, passing signals on. Returns its exit code, or 128 + N when signal
// N stopped it: what a shell reports for a job it interrupted, whatever mpirun returns.
int Supervise(pid_t pid, const sigset_t& signals) {
  int stop_signal = 0;
  timespec grace{kGraceSeconds, 0};
  while (true) {
    int signal = stop_signal ? sigtimedwait(&signals, nullptr, &grace)
                             : sigwaitinfo(&signals, nullptr);
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return stop_signal ? 128 + stop_signal : ExitCodeOf(status);
    }
    if (signal < 0 && errno == EAGAIN) {  // the grace period ran out
      kill(-pid, SIGKILL);
    } else if (signal > 0 && signal != SIGCHLD) {
      kill(-pid, signal);
      if (!stop_signal) stop_signal = signal;
    }
  }
}

}  // namespace

pid_t StartJob(const std::string& program, const MpiCommand& command, const sigset_t& old_mask,
               int stderr_fd) {
  Environment env = CurrentEnvironment();
  for (const EnvVar& var : command.launcher_env) env[var.name] = var.value;
  std::vector<std::string> env_strings = ToEnvStrings(env);
  std::vector<char*> argv = CStrings(command.argv);
  std::vector<char*> envp = CStrings(env_strings);
  pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) ExecJob(program.c_str(), argv.data(), envp.data(), old_mask, launcher, stderr_fd);
  setpgid(pid, pid);  // also here, so a signal that comes first finds the group
  return pid;
}

int RunJob(const std::string& program, const MpiCommand& command) {
  // Blocked signals wait to be picked up by Supervise(), so none is lost or handled
  // asynchronously.
  sigset_t signals, old_mask;
  sigemptyset(&signals);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&signals, signal);
  sigprocmask(SIG_BLOCK, &signals, &old_mask);
  pid_t pid = StartJob(program, command, old_mask);
  int exit_code = Supervise(pid, signals);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return exit_code;
}

}  // namespace horde::launcher
