#include "mpi_ops/mpi_reducescatter.h"

#include <climits>
#include <cstring>

#include "core/rank_agreement.h"
#include "core/row_split.h"
#include "mpi_ops/host_scale.h"
#include "mpi_ops/mpi_transport.h"
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
  std::vector<int> int_counts;
  const void* send = nullptr;
  void* received = nullptr;
  Status local = Prepare(entries, response, &splits, &counts, &int_counts, &send, &received);
  MpiTransport transport(context_);
  HORDE_RETURN_IF_ERROR(
      AgreeAllSucceeded(&transport, local, OpName(entries), RankNames(topology.world_ranks)));
  HORDE_RETURN_IF_ERROR(Combine(send, received, int_counts, response));

  PostscaleHostBuffer(received, counts[topology.rank], response.dtype,
                      PostscaleOf(response, topology.size));
  if (entries.size() == 1) return Status::Ok();
  // This rank's share of every tensor, tensor after tensor.
  const int64_t element_size = DataTypeSize(response.dtype);
  const char* from = static_cast<const char*>(received);
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t bytes = splits[i].rows[topology.rank] * splits[i].row_elements * element_size;
    if (bytes > 0) std::memcpy(entries[i].output->data(), from, bytes);
    from += bytes;
  }
  return Status::Ok();
}

Status MpiReducescatter::Prepare(std::vector<TensorEntry>& entries, const Response& response,
                                 std::vector<Split>* splits, std::vector<int64_t>* counts,
                                 std::vector<int>* int_counts, const void** send, void** received) {
  const Topology& topology = context_->topology();
  for (auto& entry : entries) {
    const TensorShape shape = entry.input->shape();
    Split split{ReducescatterRows(shape[0], topology.size),
                NumElements(TensorShape(shape.begin() + 1, shape.end()))};
    for (int r = 0; r < topology.size; ++r) (*counts)[r] += split.rows[r] * split.row_elements;
    TensorShape output_shape = shape;
    output_shape[0] = split.rows[topology.rank];
    HORDE_RETURN_IF_ERROR(entry.allocate_output(output_shape, &entry.output));
    splits->push_back(std::move(split));
  }
  for (int64_t n : *counts) {
    if (n > INT_MAX) {
      return Status::InvalidArgument(OpName(entries) + ": more than " + std::to_string(INT_MAX) +
                                     " elements per rank are not supported by the MPI path");
    }
    int_counts->push_back(static_cast<int>(n));
  }
  if (entries.size() == 1) {
    *received = entries[0].output->data();
    return ScaledInput(entries[0], response, send);
  }
  char* buffer = nullptr;
  HORDE_RETURN_IF_ERROR(
      received_.Reserve((*counts)[topology.rank] * DataTypeSize(response.dtype), &buffer));
  *received = buffer;
  return Pack(entries, *splits, response, send);
}

// The send buffer of a fused reducescatter: rank r's block holds its rows of every
// tensor in turn, prescaled once as a whole.
Status MpiReducescatter::Pack(std::vector<TensorEntry>& entries, const std::vector<Split>& splits,
                              const Response& response, const void** send) {
  const int size = context_->topology().size;
  const int64_t element_size = DataTypeSize(response.dtype);
  int64_t total = 0;
  for (auto& entry : entries) total += entry.input->size_bytes();
  char* packed = nullptr;
  HORDE_RETURN_IF_ERROR(prescaled_.Reserve(total, &packed));
  char* to = packed;
  std::vector<int64_t> rows_taken(entries.size(), 0);
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t row_bytes = splits[i].row_elements * element_size;
      const int64_t bytes = splits[i].rows[r] * row_bytes;
      if (bytes > 0)
        std::memcpy(to,
                    static_cast<const char*>(entries[i].input->data()) + rows_taken[i] * row_bytes,
                    bytes);
      to += bytes;
      rows_taken[i] += splits[i].rows[r];
    }
  }
  if (response.prescale != 1.0)
    ScaleHostBuffer(packed, total / element_size, response.dtype, response.prescale);
  *send = packed;
  return Status::Ok();
}

Status MpiReducescatter::Combine(const void* send, void* received,
                                 const std::vector<int>& int_counts, const Response& response) {
  int64_t total = 0;
  for (int n : int_counts) total += n;
  if (total * DataTypeSize(response.dtype) >= kRingBytes) {
    return CombineOnRing(send, received, int_counts, response);
  }
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Ireduce_scatter(send, received, int_counts.data(), types_->Datatype(response.dtype),
                          types_->Op(response.dtype, response.reduce_op), context_->world(),
                          &request),
      "MPI_Ireduce_scatter"));
  return WaitPolling(&request, "MPI_Ireduce_scatter");
}

Status MpiReducescatter::CombineOnRing(const void* send, void* received,
                                       const std::vector<int>& int_counts,
                                       const Response& response) {
  const Topology& topology = context_->topology();
  const int64_t element_size = DataTypeSize(response.dtype);
  std::vector<int64_t> counts(int_counts.begin(), int_counts.end());
  int64_t total = 0, mine = 0;
  for (int r = 0; r < topology.size; ++r) {
    if (r == topology.rank) mine = total;
    total += counts[r];
  }
  char* work = nullptr;
  HORDE_RETURN_IF_ERROR(ring_work_.Reserve(total * element_size, &work));
  if (total > 0) std::memcpy(work, send, total * element_size);
  if (!ring_ || ring_->comm() != context_->world()) {
    ring_ = std::make_unique<RingAllreduce>(context_->world(), topology.rank, topology.size,
                                            RingAllreduce::Tags::kReduceScatter);
  }
  HORDE_RETURN_IF_ERROR(ring_->RunReduceScatter(work, counts, static_cast<int>(element_size),
                                                types_->Datatype(response.dtype),
                                                types_->Op(response.dtype, response.reduce_op)));
  if (counts[topology.rank] > 0)
    std::memcpy(received, work + mine * element_size, counts[topology.rank] * element_size);
  return Status::Ok();
}

std::string MpiReducescatter::OpName(const std::vector<TensorEntry>& entries) {
  if (entries.size() == 1) return "reducescatter '" + entries[0].name + "'";
  return "reducescatter of " + std::to_string(entries.size()) + " tensors";
}

Status MpiReducescatter::ScaledInput(TensorEntry& entry, const Response& response,
                                     const void** send) {
  if (response.prescale == 1.0) {
    *send = entry.input->data();
    return Status::Ok();
  }
  const int64_t bytes = entry.input->size_bytes();
  char* copy = nullptr;
  HORDE_RETURN_IF_ERROR(prescaled_.Reserve(bytes, &copy));
  if (bytes > 0) std::memcpy(copy, entry.input->data(), bytes);
  ScaleHostBuffer(copy, bytes / DataTypeSize(response.dtype), response.dtype, response.prescale);
  *send = copy;
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
