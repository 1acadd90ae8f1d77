#include "launcher/job_directory.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace horde::launcher {
namespace {

// Takes the lock on a file made under a temporary name and then renamed into place, so
// that no other horderun can find the lock file before it is held.
int HoldOwnerLock(const std::string& dir) {
  std::string temporary = dir + "/" + JobDirectory::kOwnerLock + ".new";
  int fd = open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  std::string final_name = dir + "/" + JobDirectory::kOwnerLock;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(temporary.c_str(), final_name.c_str()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when `dir` is this user's, has an owner lock file, and nobody holds the lock.
bool IsAbandoned(const std::string& dir) {
  struct stat info;
  if (lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid()) {
    return false;
  }
  std::string lock = dir + "/" + JobDirectory::kOwnerLock;
  int fd = open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

}  // namespace

std::string JobDirectory::DefaultBase() {
  return std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
}

JobDirectory::JobDirectory(const std::string& base) {
  std::string pattern = base + "/" + kPrefix + "XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create the job directory under " + base +
                             ": expected a writable /dev/shm or /tmp");
  }
  path_ = pattern;
  lock_fd_ = HoldOwnerLock(path_);
  if (lock_fd_ < 0) {
    std::string reason = std::strerror(errno);
    rmdir(path_.c_str());
    throw std::runtime_error("cannot lock the job directory " + path_ + ": " + reason);
  }
}

JobDirectory::~JobDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  if (lock_fd_ >= 0) close(lock_fd_);
}

std::vector<std::string> RemoveAbandonedJobDirectories(const std::string& base) {
  std::vector<std::string> removed;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(JobDirectory::kPrefix, 0) != 0 || !IsAbandoned(entry.path().string())) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
    if (!ignored) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace horde::launcher
