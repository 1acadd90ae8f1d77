#include "mpi_ops/mpi_tree_allreduce.h"

#include <cstring>

#include "mpi_ops/host_scale.h"

namespace horde {
namespace mpi {
namespace {

constexpr const char* kTreePhase = "TREE_ALLREDUCE";

}  // namespace

bool MpiTreeAllreduce::Enabled(const Response& response,
                               const std::vector<TensorEntry>& entries) const {
  if (response.device != kCpuDevice || response.reduce_op == ReduceOp::kAdasum) return false;
  int64_t bytes = 0;
  for (const TensorEntry& e : entries) bytes += e.input->size_bytes();
  // Every rank holds the same plan and the same shapes, so every rank decides the same.
  return plan_->TreesForAllreduce(bytes, static_cast<int>(DataTypeSize(response.dtype)));
}

Status MpiTreeAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const int64_t element_size = DataTypeSize(response.dtype);
  if (entries.size() == 1) {
    TensorEntry& e = entries[0];
    char* out = static_cast<char*>(e.output->data());
    const int64_t bytes = e.input->size_bytes();
    if (out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    timeline_->ActivityStart(response.names, kTreePhase);
    return Reduce(out, bytes / element_size, response);
  }
  copier_.Layout(entries);
  HORDE_RETURN_IF_ERROR(fusion_buffer_->Bind(&copier_, response));
  const int64_t total = copier_.total_bytes();
  timeline_->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
  copier_.CopyIn(0, total);
  timeline_->ActivityStart(response.names, kTreePhase);
  HORDE_RETURN_IF_ERROR(Reduce(copier_.buffer(), total / element_size, response));
  timeline_->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
  copier_.CopyOut(0, total);
  return Status::Ok();
}

int MpiTreeAllreduce::CommRank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

Status MpiTreeAllreduce::Reduce(char* data, int64_t count, const Response& response) {
  if (response.prescale != 1.0) ScaleHostBuffer(data, count, response.dtype, response.prescale);
  HORDE_RETURN_IF_ERROR(Combine(data, count, response));
  PostscaleHostBuffer(data, count, response.dtype,
                      PostscaleOf(response, context_->topology().size));
  return Status::Ok();
}

Status MpiTreeAllreduce::Combine(char* data, int64_t count, const Response& response) {
  return CombineOverTrees(data, count, response);
}

Status MpiTreeAllreduce::CombineOverTrees(char* data, int64_t count, const Response& response) {
  return pipeline_.Allreduce(
      plan_->trees(), data, count, static_cast<int>(DataTypeSize(response.dtype)),
      types_->Datatype(response.dtype), types_->Op(response.dtype, response.reduce_op));
}

}  // namespace mpi
}  // namespace horde
