#include "launcher/rank_exit.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <regex>

#include "launcher/elastic_exit_codes.h"

namespace horde::launcher {
namespace {

// Signals mpirun (or a user) sends to a rank: they go on to COMMAND. SIGKILL cannot be
// caught; COMMAND then dies with the wrapper (PR_SET_PDEATHSIG).
constexpr int kForwarded[] = {SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCONT};

volatile sig_atomic_t child_pid = 0;
volatile sig_atomic_t received[NSIG] = {};  // signals this wrapper got (and sent on)

void Forward(int signal) {
  received[signal] = 1;
  if (child_pid > 0) kill(child_pid, signal);
}

// Whether COMMAND's death by `signal` is one this wrapper was sent too. A job stopped as
// a process group signals both at once, and COMMAND may be reaped before the wrapper's
// own copy is handled: a stop signal gets a moment to arrive.
bool SignalledWithUs(int signal) {
  const bool stop = signal == SIGTERM || signal == SIGINT || signal == SIGHUP;
  for (int waited_ms = 0; stop && !received[signal] && waited_ms < 500; waited_ms += 10) {
    usleep(10000);
  }
  return received[signal];
}

std::string RankOfThisProcess() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* value = getenv(name)) return value;
  }
  return "?";
}

void ReportFailure(int status) {
  std::string what = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                         : "exit code " + std::to_string(WEXITSTATUS(status));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string line = "horde rank " + RankOfThisProcess() + " on " + host + ": " + what + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

bool IsFailure(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) != SIGUSR1 && !SignalledWithUs(WTERMSIG(status));
  int code = WEXITSTATUS(status);
  return code != 0 && code != kResetExitCode && code != kCommitLostExitCode;
}

}  // namespace

int RunRankExitWrapper(const std::vector<std::string>& command) {
  if (command.empty()) return 127;
  // Blocked until child_pid is set, so that no signal that comes meanwhile is lost.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  struct sigaction action = {};
  action.sa_handler = Forward;
  sigemptyset(&action.sa_mask);
  for (int signal : kForwarded) {
    sigaddset(&forwarded, signal);
    sigaction(signal, &action, nullptr);
  }
  sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL);
    for (int signal : kForwarded) ::signal(signal, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  child_pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (IsFailure(status)) ReportFailure(status);
  if (!WIFSIGNALED(status)) return WEXITSTATUS(status);
  // Dies of the same signal, so that mpirun reports the rank as it would without us.
  signal(WTERMSIG(status), SIG_DFL);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, WTERMSIG(status));
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(WTERMSIG(status));
  return 128 + WTERMSIG(status);  // a signal whose default is not to end the process
}

std::optional<RankEnd> RankEndInExitLine(const std::string& line) {
  static const std::regex kLine(
      R"(horde rank (\d{1,9}) on \S+: (killed by signal|exit code) (\d{1,3})$)");
  std::smatch match;
  if (line.size() > 1000 || !std::regex_search(line, match, kLine)) return std::nullopt;
  return RankEnd{std::stoi(match[1].str()), match[2].str() == "killed by signal",
                 std::stoi(match[3].str())};
}

}  // namespace horde::launcher
