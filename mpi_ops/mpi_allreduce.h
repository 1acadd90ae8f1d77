#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "core/timeline.h"
#include "mpi_ops/fusion_buffer.h"
#include "mpi_ops/fusion_copier.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"

namespace horde {
namespace mpi {

// Allreduce of host tensors with MPI. One tensor is reduced in place in its output.
// Several are packed into the persistent fusion buffer at aligned offsets, reduced, and
// copied back out; a buffer larger than one chunk is reduced chunk by chunk with
// non-blocking allreduces, copying the next chunk in and the previous one out while
// each is in flight.
class MpiAllreduce : public CollectiveOp {
 public:
  static constexpr int64_t kPipelineChunkBytes = 4 << 20;

  // Records its phases (copies, the collective) on `timeline`; fuses in `fusion_buffer`.
  MpiAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types,
               std::shared_ptr<Timeline> timeline, std::shared_ptr<FusionBuffer> fusion_buffer)
      : context_(std::move(context)),
        types_(std::move(types)),
        timeline_(std::move(timeline)),
        fusion_buffer_(std::move(fusion_buffer)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  using ByteRange = std::pair<int64_t, int64_t>;

  Status ReduceInPlace(void* data, int64_t count, const Response& response);
  Status ReducePipelined(const FusionCopier& copier, const Response& response);
  // Prescales the chunk and starts its non-blocking allreduce.
  Status StartChunk(char* buffer, ByteRange chunk, const Response& response, MPI_Request* request);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<MpiDatatypes> types_;
  std::shared_ptr<Timeline> timeline_;
  std::shared_ptr<FusionBuffer> fusion_buffer_;
  FusionCopier copier_;  // laid out again for each fused response
};

}  // namespace mpi
}  // namespace horde
