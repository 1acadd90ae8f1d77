#include "mpi_ops/mpi_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

constexpr int kYieldPolls = 64;
constexpr std::chrono::microseconds kFirstSleep(20);
constexpr std::chrono::microseconds kLongestSleep(1000);

}  // namespace

Status WaitPolling(MPI_Request* request, const char* call) {
  auto sleep = kFirstSleep;
  for (int polls = 0;; ++polls) {
    int done = 0;
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), call));
    if (done) return Status::Ok();
    if (polls < kYieldPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, kLongestSleep);
    }
  }
}

Status WaitProgressing(MPI_Request* request, const char* call) {
  for (int done = 0; !done;) {
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), call));
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
