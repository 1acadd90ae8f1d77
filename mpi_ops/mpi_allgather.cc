#include "mpi_ops/mpi_allgather.h"

#include <climits>

namespace horde {
namespace mpi {

Status MpiAllgather::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const size_t size = static_cast<size_t>(context_->topology().size);
  if (response.first_dims.size() != entries.size() * size) {
    return Status::Internal("allgather response carries " +
                            std::to_string(response.first_dims.size()) +
                            " first dimensions for " + std::to_string(entries.size()) +
                            " tensors on " + std::to_string(size) + " ranks");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    HORDE_RETURN_IF_ERROR(Gather(entries[i], &response.first_dims[i * size]));
  }
  return Status::Ok();
}

Status MpiAllgather::Gather(TensorEntry& entry, const int64_t* first_dims) {
  const int size = context_->topology().size;
  TensorShape shape = entry.input->shape();
  // A scalar gathers as one row per rank.
  TensorShape row_shape = shape.empty() ? TensorShape{} : TensorShape(shape.begin() + 1, shape.end());
  const int64_t row_bytes = NumElements(row_shape) * DataTypeSize(entry.input->dtype());

  std::vector<int> counts(size), displacements(size);
  int64_t rows = 0;
  for (int r = 0; r < size; ++r) {
    int64_t offset = rows * row_bytes, count = first_dims[r] * row_bytes;
    if (offset + count > INT_MAX) {
      return Status::InvalidArgument("allgather '" + entry.name +
                                     "': output over 2 GiB is not supported by the MPI path");
    }
    counts[r] = static_cast<int>(count);
    displacements[r] = static_cast<int>(offset);
    rows += first_dims[r];
  }
  TensorShape output_shape = row_shape;
  output_shape.insert(output_shape.begin(), rows);
  HORDE_RETURN_IF_ERROR(entry.allocate_output(output_shape, &entry.output));

  const int rank = context_->topology().rank;
  return CheckMpi(MPI_Allgatherv(entry.input->data(), counts[rank], MPI_BYTE, entry.output->data(),
                                 counts.data(), displacements.data(), MPI_BYTE, context_->world()),
                  "MPI_Allgatherv");
}

}  // namespace mpi
}  // namespace horde
