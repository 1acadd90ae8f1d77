#pragma once

#include <string>
#include <vector>

namespace horde::launcher {

// The per-job directory where an elastic job's ranks keep their last commit
// ($HORDE_ELASTIC_DIR): on tmpfs (memory, so a commit costs a copy, not a disk write),
// made by mkdtemp (mode 0700) under /dev/shm, else /tmp. Ranks on other hosts create the
// same path there. Its owner holds a lock on kOwnerLock inside it for as long as it runs,
// so a later horderun of the same user can tell the directory of one that died (SIGKILL
// runs no cleanup) from a live job's, and remove it (RemoveAbandonedJobDirectories).
class JobDirectory {
 public:
  static constexpr const char* kPrefix = "horde-elastic-";
  static constexpr const char* kOwnerLock = ".horderun-owner";

  explicit JobDirectory(const std::string& base = DefaultBase());  // throws std::runtime_error
  ~JobDirectory();                                                 // removes it
  JobDirectory(const JobDirectory&) = delete;
  JobDirectory& operator=(const JobDirectory&) = delete;

  const std::string& path() const { return path_; }
  static std::string DefaultBase();

 private:
  std::string path_;
  int lock_fd_ = -1;
};

// Removes the job directories under `base` that this user's horderun made and no live
// horderun owns (their lock is free); returns their paths. Directories without the lock
// file (made by the ranks of a job launched elsewhere) or of other users are left alone.
std::vector<std::string> RemoveAbandonedJobDirectories(const std::string& base);

}  // namespace horde::launcher
