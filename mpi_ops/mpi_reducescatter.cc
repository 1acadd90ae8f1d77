#include "mpi_ops/mpi_reducescatter.h"

#include <climits>
#include <cstring>

#include "core/row_split.h"
#include "mpi_ops/host_scale.h"
#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {

// What one tensor contributes: its rows per rank (core/row_split.h), elements per row,
// and the MPI count each rank receives of it.
struct MpiReducescatter::Split {
  std::vector<int64_t> rows;
  int64_t row_elements = 0;
};

Status MpiReducescatter::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const Topology& topology = context_->topology();
  std::vector<Split> splits;
  std::vector<int64_t> counts(topology.size, 0);  // elements each rank receives
  for (auto& entry : entries) {
    const TensorShape shape = entry.input->shape();
    Split split{ReducescatterRows(shape[0], topology.size), NumElements(TensorShape(shape.begin() + 1, shape.end()))};
    for (int r = 0; r < topology.size; ++r) counts[r] += split.rows[r] * split.row_elements;
    TensorShape output_shape = shape;
    output_shape[0] = split.rows[topology.rank];
    HORDE_RETURN_IF_ERROR(entry.allocate_output(output_shape, &entry.output));
    splits.push_back(std::move(split));
  }
  // Every rank holds the same shapes (negotiation checked), so every rank decides alike
  // here and none is left waiting in MPI.
  std::vector<int> int_counts;
  for (int64_t n : counts) {
    if (n > INT_MAX) {
      return Status::InvalidArgument(OpName(entries) + ": more than " + std::to_string(INT_MAX) +
                                     " elements per rank are not supported by the MPI path");
    }
    int_counts.push_back(static_cast<int>(n));
  }
  const int64_t element_size = DataTypeSize(response.dtype);
  const bool fused = entries.size() > 1;
  const void* send = fused ? Pack(entries, splits, response) : ScaledInput(entries[0], response);
  void* received = fused ? received_.Reserve(counts[topology.rank] * element_size) : entries[0].output->data();
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Ireduce_scatter(send, received, int_counts.data(), types_->Datatype(response.dtype),
                                                     types_->Op(response.dtype, response.reduce_op), context_->world(),
                                                     &request),
                                 "MPI_Ireduce_scatter"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Ireduce_scatter"));

  double postscale = response.postscale;
  if (response.reduce_op == ReduceOp::kAverage) postscale /= topology.size;
  if (postscale != 1.0) ScaleHostBuffer(received, counts[topology.rank], response.dtype, postscale);
  if (!fused) return Status::Ok();
  // This rank's share of every tensor, tensor after tensor.
  const char* from = static_cast<const char*>(received);
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t bytes = splits[i].rows[topology.rank] * splits[i].row_elements * element_size;
    if (bytes > 0) std::memcpy(entries[i].output->data(), from, bytes);
    from += bytes;
  }
  return Status::Ok();
}

// The send buffer of a fused reducescatter: rank r's block holds its rows of every
// tensor in turn, prescaled once as a whole.
const void* MpiReducescatter::Pack(std::vector<TensorEntry>& entries, const std::vector<Split>& splits,
                                   const Response& response) {
  const int size = context_->topology().size;
  const int64_t element_size = DataTypeSize(response.dtype);
  int64_t total = 0;
  for (auto& entry : entries) total += entry.input->size_bytes();
  char* packed = prescaled_.Reserve(total);
  char* to = packed;
  std::vector<int64_t> rows_taken(entries.size(), 0);
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t row_bytes = splits[i].row_elements * element_size;
      const int64_t bytes = splits[i].rows[r] * row_bytes;
      if (bytes > 0) std::memcpy(to, static_cast<const char*>(entries[i].input->data()) + rows_taken[i] * row_bytes, bytes);
      to += bytes;
      rows_taken[i] += splits[i].rows[r];
    }
  }
  if (response.prescale != 1.0) ScaleHostBuffer(packed, total / element_size, response.dtype, response.prescale);
  return packed;
}

std::string MpiReducescatter::OpName(const std::vector<TensorEntry>& entries) {
  if (entries.size() == 1) return "reducescatter '" + entries[0].name + "'";
  return "reducescatter of " + std::to_string(entries.size()) + " tensors";
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
