#include "mpi_ops/ring_allreduce.h"

#include <climits>

#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

// The ring's messages on its communicator: ops run one at a time there, and MPI keeps
// the messages of one sender and tag in order.
constexpr int kRingTag = 0x7E12;

}  // namespace

Status RingAllreduce::Pass(char* data, int send, int receive, char* into, MPI_Datatype type) {
  const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
  return CheckMpi(
      MPI_Sendrecv(data + offsets_[send] * element_size_, static_cast<int>(counts_[send]), type,
                   next, kRingTag, into, static_cast<int>(counts_[receive]), type, previous,
                   kRingTag, comm_, MPI_STATUS_IGNORE),
      "MPI_Sendrecv (ring allreduce)");
}

Status RingAllreduce::Run(char* data, int64_t count, int element_size, MPI_Datatype type,
                          MPI_Op op) {
  if (size_ < 2 || count == 0) return Status::Ok();
  if (count / size_ + 1 > INT_MAX) {
    return Status::InvalidArgument("ring allreduce: " + std::to_string(count) +
                                   " elements make chunks larger than MPI's int counts");
  }
  element_size_ = element_size;
  counts_.assign(size_, 0);
  offsets_.assign(size_, 0);
  for (int i = 0; i < size_; ++i) {
    counts_[i] = count / size_ + (i < count % size_ ? 1 : 0);
    if (i > 0) offsets_[i] = offsets_[i - 1] + counts_[i - 1];
  }
  char* incoming = nullptr;
  HORDE_RETURN_IF_ERROR(scratch_.Reserve(counts_[0] * element_size, &incoming));
  // Step s: send the chunk reduced over s + 1 ranks, receive the previous rank's and
  // reduce it into ours; after n - 1 steps, chunk rank + 1 is reduced over all.
  for (int step = 0; step < size_ - 1; ++step) {
    const int send = (rank_ - step + size_) % size_;
    const int receive = (rank_ - step - 1 + 2 * size_) % size_;
    HORDE_RETURN_IF_ERROR(Pass(data, send, receive, incoming, type));
    HORDE_RETURN_IF_ERROR(
        CheckMpi(MPI_Reduce_local(incoming, data + offsets_[receive] * element_size,
                                  static_cast<int>(counts_[receive]), type, op),
                 "MPI_Reduce_local (ring allreduce)"));
  }
  // Then each rank passes on the reduced chunk it last received, n - 1 times.
  for (int step = 0; step < size_ - 1; ++step) {
    const int send = (rank_ + 1 - step + size_) % size_;
    const int receive = (rank_ - step + size_) % size_;
    HORDE_RETURN_IF_ERROR(Pass(data, send, receive, data + offsets_[receive] * element_size, type));
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
