#include "launcher/elastic_generation.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "launcher/child_process.h"
#include "launcher/job_runner.h"

namespace horde::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxPartialLine = 65536;  // no line of mpirun's is that long

void WriteAll(int fd, const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t written = write(fd, data + done, size - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    done += written;
  }
}

}  // namespace

MpirunGeneration::MpirunGeneration(std::string program,
                                   std::function<MpiCommand(const GenerationPlan&)> build,
                                   const sigset_t& old_mask)
    : program_(std::move(program)), build_(std::move(build)), old_mask_(old_mask) {}

MpirunGeneration::~MpirunGeneration() {
  if (pid_ > 0 && !stopped_status_) Stop(SIGTERM);  // an exception left it running
  if (pid_ > 0) kill(-pid_, SIGKILL);
  if (stderr_fd_ >= 0) close(stderr_fd_);
}

void MpirunGeneration::Start(const GenerationPlan& plan) {
  MpiCommand command = build_(plan);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  try {
    pid_ = StartJob(program_, command, old_mask_, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  stderr_fd_ = fds[0];
  partial_.clear();
  output_ = GenerationOutput();
  stopped_status_.reset();
}

// Waits up to `wait` for mpirun's output, passes it on to horderun's stderr and scans it.
void MpirunGeneration::Pump(std::chrono::milliseconds wait) {
  if (stderr_fd_ < 0) return void(poll(nullptr, 0, static_cast<int>(wait.count())));
  pollfd entry{stderr_fd_, POLLIN, 0};
  if (poll(&entry, 1, static_cast<int>(wait.count())) <= 0) return;
  char buffer[4096];
  ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    close(stderr_fd_);
    stderr_fd_ = -1;
    return;
  }
  WriteAll(STDERR_FILENO, buffer, n);
  partial_.append(buffer, n);
  size_t newline;
  while ((newline = partial_.find('\n')) != std::string::npos) {
    output_.Scan(partial_.substr(0, newline));
    partial_.erase(0, newline + 1);
  }
  if (partial_.size() > kMaxPartialLine) partial_.clear();
}

// What is left once mpirun has exited; bounded, in case a process it started still holds
// the pipe.
void MpirunGeneration::Drain() {
  auto deadline = Clock::now() + std::chrono::seconds(2);
  while (stderr_fd_ >= 0 && Clock::now() < deadline) Pump(std::chrono::milliseconds(100));
  if (stderr_fd_ >= 0) close(stderr_fd_);
  stderr_fd_ = -1;
}

GenerationEnd MpirunGeneration::End(int status) {
  kill(-pid_, SIGKILL);  // ranks mpirun left behind, if any
  pid_ = -1;
  Drain();
  GenerationEnd end;
  end.exit_code = ExitCodeOf(status);
  end.named_by_mpirun = output_.named_by_mpirun();
  end.named_by_wrapper = output_.named_by_wrapper();
  end.stalled_ranks = output_.stalled_ranks();
  end.commit = output_.commit();
  end.complaint = output_.Complaint();
  return end;
}

std::optional<GenerationEnd> MpirunGeneration::Poll(std::chrono::milliseconds wait) {
  if (pid_ < 0) return std::nullopt;
  if (stopped_status_) return End(*std::exchange(stopped_status_, std::nullopt));
  Pump(wait);
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  return End(status);
}

void MpirunGeneration::SendHostUpdate() {
  if (pid_ > 0) kill(pid_, SIGUSR1);
}

void MpirunGeneration::Stop(int signal) {
  if (pid_ < 0) return;
  kill(-pid_, signal);
  auto deadline = Clock::now() + kGrace;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (Clock::now() > deadline) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    Pump(std::chrono::milliseconds(100));
  }
  stopped_status_ = status;
}

}  // namespace horde::launcher
