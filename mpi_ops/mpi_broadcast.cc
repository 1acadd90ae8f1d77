#include "mpi_ops/mpi_broadcast.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace horde {
namespace mpi {

Status MpiBroadcast::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const bool root = context_->topology().rank == response.root;
  for (auto& e : entries) {
    char* out = static_cast<char*>(e.output->data());
    const int64_t bytes = e.output->size_bytes();
    if (root && out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    // Bytes, not elements: broadcast needs no arithmetic, and slices of INT_MAX keep
    // MPI's int counts valid for tensors over 2 GiB.
    for (int64_t done = 0; done < bytes;) {
      int chunk = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
      HORDE_RETURN_IF_ERROR(CheckMpi(
          MPI_Bcast(out + done, chunk, MPI_BYTE, response.root, context_->world()), "MPI_Bcast"));
      done += chunk;
    }
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
