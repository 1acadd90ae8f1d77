#include "mpi_ops/mpi_allgather.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/operation_name.h"
#include "core/rank_agreement.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {
namespace {

// MPI counts and displacements (in bytes) of blocks of the given sizes laid end to end;
// an error naming `what` past MPI's int range.
Status BlockLayout(const std::vector<int64_t>& block_bytes, const std::string& what,
                   std::vector<int>* counts, std::vector<int>* displacements) {
  int64_t offset = 0;
  for (int64_t bytes : block_bytes) {
    if (offset + bytes > INT_MAX) {
      return Status::InvalidArgument(what + ": output over 2 GiB is not supported by the MPI path");
    }
    counts->push_back(static_cast<int>(bytes));
    displacements->push_back(static_cast<int>(offset));
    offset += bytes;
  }
  return Status::Ok();
}

}  // namespace

Status MpiAllgather::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const size_t size = static_cast<size_t>(context_->topology().size);
  if (response.first_dims.size() != entries.size() * size) {
    return Status::Internal("allgather response carries " +
                            std::to_string(response.first_dims.size()) + " first dimensions for " +
                            std::to_string(entries.size()) + " tensors on " + std::to_string(size) +
                            " ranks");
  }
  const std::string what = OperationName("allgather", response.names);
  Layout layout;
  const Status prepared = Prepare(entries, response.first_dims, &layout);
  MpiTransport transport(context_);
  HORDE_RETURN_IF_ERROR(
      AgreeAllSucceeded(&transport, prepared, what, RankNames(context_->topology().world_ranks)));
  if (entries.size() > 1) return GatherFused(entries, response.first_dims, layout);
  return Gather(entries[0].input->data(), entries[0].output->data(), layout);
}

// Blocks of one size (a sharded optimizer's slices, equal rows) take MPI_Allgather, whose
// algorithms Open MPI tunes far better than MPI_Allgatherv's.
Status MpiAllgather::Gather(const void* send, void* received, const Layout& layout) {
  const int rank = context_->topology().rank;
  const bool equal = std::all_of(layout.counts.begin(), layout.counts.end(),
                                 [&](int count) { return count == layout.counts[0]; });
  if (equal) {
    return CheckMpi(MPI_Allgather(send, layout.counts[0], MPI_BYTE, received, layout.counts[0],
                                  MPI_BYTE, context_->world()),
                    "MPI_Allgather");
  }
  return CheckMpi(
      MPI_Allgatherv(send, layout.counts[rank], MPI_BYTE, received, layout.counts.data(),
                     layout.displacements.data(), MPI_BYTE, context_->world()),
      "MPI_Allgatherv");
}

// Rank r's block holds its rows of every tensor, tensor after tensor.
Status MpiAllgather::Prepare(std::vector<TensorEntry>& entries,
                             const std::vector<int64_t>& first_dims, Layout* layout) {
  const int size = context_->topology().size;
  std::vector<int64_t> block_bytes(size, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    HORDE_RETURN_IF_ERROR(AllocateOutput(entries[i], &first_dims[i * size]));
    layout->row_bytes.push_back(entries[i].input->row_bytes());
    for (int r = 0; r < size; ++r)
      block_bytes[r] += first_dims[i * size + r] * layout->row_bytes[i];
  }
  const std::string what = entries.size() == 1
                               ? "allgather '" + entries[0].name + "'"
                               : "allgather of " + std::to_string(entries.size()) + " tensors";
  HORDE_RETURN_IF_ERROR(BlockLayout(block_bytes, what, &layout->counts, &layout->displacements));
  if (entries.size() == 1) return Status::Ok();
  HORDE_RETURN_IF_ERROR(send_.Reserve(block_bytes[context_->topology().rank], &layout->send));
  return received_.Reserve(layout->displacements.back() + layout->counts.back(), &layout->received);
}

Status MpiAllgather::AllocateOutput(TensorEntry& entry, const int64_t* first_dims) const {
  TensorShape output_shape = RowShape(entry.input->shape());
  int64_t rows = 0;
  for (int r = 0; r < context_->topology().size; ++r) rows += first_dims[r];
  output_shape.insert(output_shape.begin(), rows);
  return entry.allocate_output(output_shape, &entry.output);
}

// One MPI call, then each tensor's rows from each block land at that rank's offset in
// its output.
Status MpiAllgather::GatherFused(std::vector<TensorEntry>& entries,
                                 const std::vector<int64_t>& first_dims, const Layout& layout) {
  const int size = context_->topology().size;
  int64_t packed = 0;
  for (auto& entry : entries) {
    const int64_t bytes = entry.input->size_bytes();
    if (bytes > 0)
      std::memcpy(layout.send + packed, entry.input->data(),
                  bytes);  // empty tensors may have no data
    packed += bytes;
  }
  HORDE_RETURN_IF_ERROR(Gather(layout.send, layout.received, layout));
  std::vector<int64_t> written(entries.size(), 0);  // bytes of each output filled so far
  for (int r = 0; r < size; ++r) {
    const char* block = layout.received + layout.displacements[r];
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t bytes = first_dims[i * size + r] * layout.row_bytes[i];
      if (bytes > 0)
        std::memcpy(static_cast<char*>(entries[i].output->data()) + written[i], block, bytes);
      block += bytes;
      written[i] += bytes;
    }
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
