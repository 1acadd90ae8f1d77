#include "mpi_ops/mpi_planned_allreduce.h"

#include <cstring>

#include "mpi_ops/host_scale.h"

namespace horde {
namespace mpi {
bool MpiPlannedAllreduce::Enabled(const Response& response,
                                  const std::vector<TensorEntry>& entries) const {
  if (response.device != kCpuDevice || response.reduce_op == ReduceOp::kAdasum) return false;
  int64_t bytes = 0;
  for (const TensorEntry& e : entries) bytes += e.input->size_bytes();
  // Every rank holds the same plan and the same shapes, so every rank decides the same.
  return plan_->AllreduceFor(bytes, static_cast<int>(DataTypeSize(response.dtype))) !=
         TopologyPlan::Allreduce::kMpi;
}

Status MpiPlannedAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const int64_t element_size = DataTypeSize(response.dtype);
  if (entries.size() == 1) {
    TensorEntry& e = entries[0];
    char* out = static_cast<char*>(e.output->data());
    const int64_t bytes = e.input->size_bytes();
    if (out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    return Reduce(out, bytes / element_size, response);
  }
  copier_.Layout(entries);
  HORDE_RETURN_IF_ERROR(fusion_buffer_->Bind(&copier_, response));
  const int64_t total = copier_.total_bytes();
  timeline_->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
  copier_.CopyIn(0, total);
  HORDE_RETURN_IF_ERROR(Reduce(copier_.buffer(), total / element_size, response));
  timeline_->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
  copier_.CopyOut(0, total);
  return Status::Ok();
}

int MpiPlannedAllreduce::CommRank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int MpiPlannedAllreduce::CommSize(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

Status MpiPlannedAllreduce::Reduce(char* data, int64_t count, const Response& response) {
  if (response.prescale != 1.0) ScaleHostBuffer(data, count, response.dtype, response.prescale);
  HORDE_RETURN_IF_ERROR(Combine(data, count, response));
  PostscaleHostBuffer(data, count, response.dtype,
                      PostscaleOf(response, context_->topology().size));
  return Status::Ok();
}

Status MpiPlannedAllreduce::Combine(char* data, int64_t count, const Response& response) {
  return CombineAsPlanned(data, count, response);
}

Status MpiPlannedAllreduce::CombineAsPlanned(char* data, int64_t count, const Response& response) {
  const int element_size = static_cast<int>(DataTypeSize(response.dtype));
  const MPI_Datatype type = types_->Datatype(response.dtype);
  const MPI_Op op = types_->Op(response.dtype, response.reduce_op);
  switch (plan_->AllreduceFor(count * element_size, element_size)) {
    case TopologyPlan::Allreduce::kTrees:
      timeline_->ActivityStart(response.names, "TREE_ALLREDUCE");
      return pipeline_.Allreduce(plan_->trees(), data, count, element_size, type, op);
    case TopologyPlan::Allreduce::kRing:
      timeline_->ActivityStart(response.names, "RING_ALLREDUCE");
      return ring_.Run(data, count, element_size, type, op);
    case TopologyPlan::Allreduce::kMpi: break;
  }
  timeline_->ActivityStart(response.names, "MPI_ALLREDUCE");
  return CheckMpi(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, op, comm_),
                  "MPI_Allreduce");
}

}  // namespace mpi
}  // namespace horde
