#include "mpi_ops/mpi_allreduce.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "mpi_ops/host_scale.h"
#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {
namespace {

constexpr int64_t kCopySliceBytes = 256 << 10;
constexpr const char* kCollectivePhase = "MPI_ALLREDUCE";
constexpr const char* kPipelinedPhase = "MPI_ALLREDUCE_PIPELINED";

// Runs copy(begin, end) over `range` in slices, testing `request` between slices so the
// allreduce in flight keeps moving while this thread copies.
Status CopyWhileProgressing(std::pair<int64_t, int64_t> range, MPI_Request* request,
                            const std::function<void(int64_t, int64_t)>& copy) {
  for (int64_t at = range.first; at < range.second; at += kCopySliceBytes) {
    copy(at, std::min(range.second, at + kCopySliceBytes));
    if (request == nullptr) continue;
    int done = 0;
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Iallreduce"));
  }
  return Status::Ok();
}

}  // namespace

Status MpiAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const int64_t element_size = DataTypeSize(response.dtype);
  if (entries.size() == 1) {
    timeline_->ActivityStart(response.names, kCollectivePhase);
    TensorEntry& e = entries[0];
    void* out = e.output->data();
    const int64_t bytes = e.input->size_bytes();
    if (out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    return ReduceInPlace(out, bytes / element_size, response);
  }
  FusionCopier& copier = copier_;
  copier.Layout(entries);
  HORDE_RETURN_IF_ERROR(fusion_buffer_->Bind(&copier, response));
  const int64_t total = copier.total_bytes();
  if (total > kPipelineChunkBytes) {
    // Copies and reductions interleave; the timeline shows the pipeline as one phase.
    timeline_->ActivityStart(response.names, kPipelinedPhase);
    return ReducePipelined(copier, response);
  }
  timeline_->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
  copier.CopyIn(0, total);
  timeline_->ActivityStart(response.names, kCollectivePhase);
  HORDE_RETURN_IF_ERROR(ReduceInPlace(copier.buffer(), total / element_size, response));
  timeline_->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
  copier.CopyOut(0, total);
  return Status::Ok();
}

Status MpiAllreduce::ReduceInPlace(void* data, int64_t count, const Response& response) {
  if (response.prescale != 1.0) ScaleHostBuffer(data, count, response.dtype, response.prescale);
  const MPI_Datatype type = types_->Datatype(response.dtype);
  const MPI_Op op = types_->Op(response.dtype, response.reduce_op);
  const int64_t element_size = DataTypeSize(response.dtype);
  // MPI counts are ints: reduce more than INT_MAX elements in slices.
  for (int64_t done = 0; done < count;) {
    int chunk = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    char* at = static_cast<char*>(data) + done * element_size;
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Allreduce(MPI_IN_PLACE, at, chunk, type, op, context_->world()), "MPI_Allreduce"));
    done += chunk;
  }
  PostscaleHostBuffer(data, count, response.dtype,
                      PostscaleOf(response, context_->topology().size));
  return Status::Ok();
}

Status MpiAllreduce::StartChunk(char* buffer, ByteRange chunk, const Response& response,
                                MPI_Request* request) {
  const int64_t element_size = DataTypeSize(response.dtype);
  const int count = static_cast<int>((chunk.second - chunk.first) / element_size);
  char* data = buffer + chunk.first;
  if (response.prescale != 1.0) ScaleHostBuffer(data, count, response.dtype, response.prescale);
  return CheckMpi(
      MPI_Iallreduce(MPI_IN_PLACE, data, count, types_->Datatype(response.dtype),
                     types_->Op(response.dtype, response.reduce_op), context_->world(), request),
      "MPI_Iallreduce");
}

Status MpiAllreduce::ReducePipelined(const FusionCopier& copier, const Response& response) {
  const int64_t total = copier.total_bytes();
  const int64_t element_size = DataTypeSize(response.dtype);
  const int64_t chunks = (total + kPipelineChunkBytes - 1) / kPipelineChunkBytes;
  auto range = [&](int64_t k) {
    return ByteRange(k * kPipelineChunkBytes, std::min(total, (k + 1) * kPipelineChunkBytes));
  };
  auto copy_in = [&](int64_t b, int64_t e) { copier.CopyIn(b, e); };
  auto copy_out = [&](int64_t b, int64_t e) { copier.CopyOut(b, e); };
  const Postscale postscale = PostscaleOf(response, context_->topology().size);

  copier.CopyIn(range(0).first, range(0).second);
  MPI_Request in_flight;
  HORDE_RETURN_IF_ERROR(StartChunk(copier.buffer(), range(0), response, &in_flight));
  for (int64_t k = 0; k < chunks; ++k) {
    const bool more = k + 1 < chunks;
    if (more) HORDE_RETURN_IF_ERROR(CopyWhileProgressing(range(k + 1), &in_flight, copy_in));
    HORDE_RETURN_IF_ERROR(WaitProgressing(&in_flight, "MPI_Iallreduce"));
    const ByteRange done = range(k);
    PostscaleHostBuffer(copier.buffer() + done.first, (done.second - done.first) / element_size,
                        response.dtype, postscale);
    if (more)
      HORDE_RETURN_IF_ERROR(StartChunk(copier.buffer(), range(k + 1), response, &in_flight));
    HORDE_RETURN_IF_ERROR(CopyWhileProgressing(done, more ? &in_flight : nullptr, copy_out));
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
