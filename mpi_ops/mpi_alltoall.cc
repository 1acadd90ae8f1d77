#include "mpi_ops/mpi_alltoall.h"

#include <climits>

#include "core/rank_agreement.h"
#include "core/request_validator.h"
#include "mpi_ops/mpi_transport.h"
#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {
namespace {

struct RowLayout {
  TensorShape row_shape;  // every dimension but the first
  int64_t row_bytes = 0;
};

RowLayout LayoutOf(const Tensor& tensor) { return {RowShape(tensor.shape()), tensor.row_bytes()}; }

// Row counts and offsets in MPI's ints; fails if they do not fit.
Status ToMpiCounts(const std::string& name, const std::vector<int64_t>& rows,
                   std::vector<int>* counts, std::vector<int>* offsets) {
  int64_t offset = 0;
  for (int64_t n : rows) {
    if (offset + n > INT_MAX) {
      return Status::InvalidArgument("alltoall '" + name + "': more than " +
                                     std::to_string(INT_MAX) +
                                     " rows are not supported by the MPI path");
    }
    counts->push_back(static_cast<int>(n));
    offsets->push_back(static_cast<int>(offset));
    offset += n;
  }
  return Status::Ok();
}

// The splits this rank sends, as core's validation resolves them.
Status SendRows(const TensorEntry& entry, int world_size, std::vector<int64_t>* rows) {
  Request request;
  request.op = OpType::kAlltoall;
  request.name = entry.name;
  request.shape = entry.input->shape();
  *rows = entry.splits;
  return ResolveAlltoallSplits(request, world_size, rows);
}

Status AllocateOutput(TensorEntry& entry, const std::vector<int64_t>& received_rows) {
  int64_t rows = 0;
  for (int64_t n : received_rows) rows += n;
  TensorShape shape = LayoutOf(*entry.input).row_shape;
  shape.insert(shape.begin(), rows);
  HORDE_RETURN_IF_ERROR(entry.allocate_output(shape, &entry.output));
  Tensor* received = entry.received_splits.get();
  if (!received) return Status::Ok();
  if (received->dtype() != DataType::kInt32 ||
      NumElements(received->shape()) != static_cast<int64_t>(received_rows.size())) {
    return Status::Internal("alltoall '" + entry.name +
                            "': received_splits must be an int32 tensor with one element per rank");
  }
  auto* out = static_cast<int32_t*>(received->data());
  for (size_t r = 0; r < received_rows.size(); ++r) out[r] = static_cast<int32_t>(received_rows[r]);
  return Status::Ok();
}

}  // namespace

Status MpiAlltoall::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  for (auto& entry : entries) HORDE_RETURN_IF_ERROR(Exchange(entry));
  return Status::Ok();
}

Status MpiAlltoall::Exchange(TensorEntry& entry) {
  const int size = context_->topology().size;
  const MPI_Comm world = context_->world();
  std::vector<int64_t> send_rows;
  Status local = SendRows(entry, size, &send_rows);
  // A rank that cannot send still takes part in the count exchange, sending nothing.
  if (!local.ok()) send_rows.assign(size, 0);
  std::vector<int64_t> received_rows(size);
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Ialltoall(send_rows.data(), 1, MPI_INT64_T, received_rows.data(), 1, MPI_INT64_T,
                             world, &request),
               "MPI_Ialltoall"));
  HORDE_RETURN_IF_ERROR(WaitPolling(&request, "MPI_Ialltoall"));

  std::vector<int> send_counts, send_offsets, recv_counts, recv_offsets;
  const RowLayout layout = LayoutOf(*entry.input);
  if (local.ok()) local = ToMpiCounts(entry.name, send_rows, &send_counts, &send_offsets);
  if (local.ok()) local = ToMpiCounts(entry.name, received_rows, &recv_counts, &recv_offsets);
  if (local.ok() && layout.row_bytes > INT_MAX) {
    local = Status::InvalidArgument("alltoall '" + entry.name +
                                    "': rows over 2 GiB are not supported by the MPI path");
  }
  if (local.ok()) local = AllocateOutput(entry, received_rows);
  MpiTransport transport(context_);
  HORDE_RETURN_IF_ERROR(AgreeAllSucceeded(&transport, local, "alltoall '" + entry.name + "'",
                                          RankNames(context_->topology().world_ranks)));
  if (layout.row_bytes == 0) return Status::Ok();

  // One MPI datatype per row keeps counts in rows, so tensors over 2 GiB still fit.
  MPI_Datatype row;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Type_contiguous(static_cast<int>(layout.row_bytes), MPI_BYTE, &row),
               "MPI_Type_contiguous"));
  MPI_Type_commit(&row);
  Status status = CheckMpi(
      MPI_Ialltoallv(entry.input->data(), send_counts.data(), send_offsets.data(), row,
                     entry.output->data(), recv_counts.data(), recv_offsets.data(), row, world,
                     &request),
      "MPI_Ialltoallv");
  if (status.ok()) status = WaitPolling(&request, "MPI_Ialltoallv");
  MPI_Type_free(&row);
  return status;
}

}  // namespace mpi
}  // namespace horde
