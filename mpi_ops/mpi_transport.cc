#include "mpi_ops/mpi_transport.h"

#include <climits>

#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {
namespace {

constexpr int kCoordinator = 0;

Status CheckMessageSize(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return Status::Internal("negotiation message of " + std::to_string(bytes) +
                            " bytes exceeds MPI's 2 GiB count limit");
  }
  return Status::Ok();
}

}  // namespace

Status MpiTransport::GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) {
  HORDE_RETURN_IF_ERROR(CheckMessageSize(mine.size()));
  MPI_Comm comm = context_->world();
  const bool coordinator = rank() == kCoordinator;
  int my_length = static_cast<int>(mine.size());
  std::vector<int> lengths(coordinator ? size() : 0);
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Igather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, kCoordinator, comm, &request),
      "MPI_Igather"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Igather"));

  std::vector<int> displacements(lengths.size());
  size_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    displacements[r] = static_cast<int>(total);
    total += lengths[r];
  }
  HORDE_RETURN_IF_ERROR(CheckMessageSize(total));
  std::string gathered(total, '\0');
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Igatherv(mine.data(), my_length, MPI_BYTE, &gathered[0], lengths.data(),
                            displacements.data(), MPI_BYTE, kCoordinator, comm, &request),
               "MPI_Igatherv"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Igatherv"));

  all->clear();
  for (size_t r = 0; r < lengths.size(); ++r) {
    all->push_back(gathered.substr(displacements[r], lengths[r]));
  }
  return Status::Ok();
}

Status MpiTransport::BroadcastFromCoordinator(std::string* blob) {
  HORDE_RETURN_IF_ERROR(CheckMessageSize(blob->size()));
  MPI_Comm comm = context_->world();
  int length = static_cast<int>(blob->size());
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Ibcast(&length, 1, MPI_INT, kCoordinator, comm, &request), "MPI_Ibcast"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Ibcast"));
  blob->resize(length);
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Ibcast(&(*blob)[0], length, MPI_BYTE, kCoordinator, comm, &request), "MPI_Ibcast"));
  return WaitPolling(&request, "MPI_Ibcast");
}

Status MpiTransport::AllreduceAnd(std::vector<uint64_t>* words) {
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Iallreduce(MPI_IN_PLACE, words->data(), static_cast<int>(words->size()),
                              MPI_UINT64_T, MPI_BAND, context_->world(), &request),
               "MPI_Iallreduce"));
  return WaitPolling(&request, "MPI_Iallreduce");
}

}  // namespace mpi
}  // namespace horde
