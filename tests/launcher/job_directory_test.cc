// The elastic job directory: private, owned while its horderun lives, and removable by a
// later horderun once its owner is gone.
#include "launcher/job_directory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/temp_dir.h"

namespace horde::launcher {
namespace {

namespace fs = std::filesystem;

TEST(JobDirectory, IsPrivateAndGoesWithItsOwner) {
  horde::test::TempDir base;
  std::string path;
  {
    JobDirectory dir(base.path());
    path = dir.path();
    struct stat info;
    ASSERT_EQ(stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    EXPECT_EQ(fs::path(path).filename().string().rfind(JobDirectory::kPrefix, 0), 0u);
    EXPECT_TRUE(fs::exists(path + "/" + JobDirectory::kOwnerLock));
    // A live owner's directory is not abandoned.
    EXPECT_TRUE(RemoveAbandonedJobDirectories(base.path()).empty());
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

// A SIGKILLed horderun leaves its directory with a lock file nobody holds.
TEST(JobDirectory, ALaterHorderunRemovesWhatADeadOneLeft) {
  horde::test::TempDir base;
  std::string dead = base.File(std::string(JobDirectory::kPrefix) + "dead01");
  fs::create_directory(dead);
  std::ofstream(dead + "/" + JobDirectory::kOwnerLock);
  std::ofstream(dead + "/commit-3-1.pt") << "model";
  // Made by the ranks of a job launched on another host: no lock file, left alone.
  std::string ranks_made = base.File(std::string(JobDirectory::kPrefix) + "other1");
  fs::create_directory(ranks_made);
  std::string unrelated = base.File("unrelated");
  fs::create_directory(unrelated);
  std::ofstream(unrelated + "/" + JobDirectory::kOwnerLock);
  EXPECT_EQ(RemoveAbandonedJobDirectories(base.path()), std::vector<std::string>{dead});
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(ranks_made));
  EXPECT_TRUE(fs::exists(unrelated));
}

TEST(JobDirectory, SaysWhyItCannotBeMade) {
  try {
    JobDirectory dir("/nonexistent/base");
    FAIL() << "made " << dir.path();
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot create the job directory under /nonexistent/base: expected a writable "
              "/dev/shm or /tmp");
  }
}

}  // namespace
}  // namespace horde::launcher
