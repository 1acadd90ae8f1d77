#include "mpi_ops/mpi_reducescatter.h"

#include <climits>
#include <cstring>

#include "core/row_split.h"
#include "mpi_ops/host_scale.h"
#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {

Status MpiReducescatter::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  for (auto& entry : entries) HORDE_RETURN_IF_ERROR(Scatter(entry, response));
  return Status::Ok();
}

Status MpiReducescatter::Scatter(TensorEntry& entry, const Response& response) {
  const Topology& topology = context_->topology();
  const TensorShape shape = entry.input->shape();
  const int64_t row_elements = NumElements(TensorShape(shape.begin() + 1, shape.end()));
  const std::vector<int64_t> rows = ReducescatterRows(shape[0], topology.size);
  // Every rank holds the same shape (negotiation checked), so every rank decides alike
  // here and none is left waiting in MPI.
  std::vector<int> counts;
  for (int64_t n : rows) {
    if (n * row_elements > INT_MAX) {
      return Status::InvalidArgument("reducescatter '" + entry.name + "': more than " +
                                     std::to_string(INT_MAX) +
                                     " elements per rank are not supported by the MPI path");
    }
    counts.push_back(static_cast<int>(n * row_elements));
  }
  TensorShape output_shape = shape;
  output_shape[0] = rows[topology.rank];
  HORDE_RETURN_IF_ERROR(entry.allocate_output(output_shape, &entry.output));

  MPI_Request request;
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Ireduce_scatter(ScaledInput(entry, response), entry.output->data(), counts.data(),
                          types_->Datatype(response.dtype), types_->Op(response.dtype, response.reduce_op),
                          context_->world(), &request),
      "MPI_Ireduce_scatter"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Ireduce_scatter"));

  double postscale = response.postscale;
  if (response.reduce_op == ReduceOp::kAverage) postscale /= topology.size;
  if (postscale != 1.0) ScaleHostBuffer(entry.output->data(), counts[topology.rank], response.dtype, postscale);
  return Status::Ok();
}

const void* MpiReducescatter::ScaledInput(TensorEntry& entry, const Response& response) {
  if (response.prescale == 1.0) return entry.input->data();
  const int64_t bytes = entry.input->size_bytes();
  char* copy = prescaled_.Reserve(bytes);
  if (bytes > 0) std::memcpy(copy, entry.input->data(), bytes);
  ScaleHostBuffer(copy, bytes / DataTypeSize(response.dtype), response.dtype, response.prescale);
  return copy;
}

}  // namespace mpi
}  // namespace horde
