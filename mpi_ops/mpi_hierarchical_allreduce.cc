#include "mpi_ops/mpi_hierarchical_allreduce.h"

#include <climits>
#include <cstring>

namespace horde {
namespace mpi {

MpiHierarchicalAllreduce::MpiHierarchicalAllreduce(std::shared_ptr<MpiContext> context,
                                                   std::shared_ptr<MpiDatatypes> types,
                                                   std::shared_ptr<Timeline> timeline,
                                                   std::shared_ptr<FusionBuffer> fusion_buffer,
                                                   std::shared_ptr<const TopologyPlan> plan)
    : MpiPlannedAllreduce(context->cross(), context, std::move(types), std::move(timeline),
                          std::move(fusion_buffer), std::move(plan)) {}

bool MpiHierarchicalAllreduce::Enabled(const Response& response,
                                       const std::vector<TensorEntry>& entries) const {
  if (response.device != kCpuDevice || response.reduce_op == ReduceOp::kAdasum) return false;
  const int64_t element_size = DataTypeSize(response.dtype);
  int64_t bytes = 0;
  for (const TensorEntry& e : entries) bytes += e.input->size_bytes();
  const int64_t local_size = context()->topology().local_size;
  // MPI takes element counts as int.
  if (bytes / element_size > static_cast<int64_t>(INT_MAX)) return false;
  // Reducing within the hosts first halves what crosses a NIC or better, whatever runs
  // across them. Every rank holds the same plan and shapes, so every rank decides alike.
  return bytes >= plan().min_allreduce_bytes() * local_size;
}

Status MpiHierarchicalAllreduce::Combine(char* data, int64_t count, const Response& response) {
  const Topology& topology = context()->topology();
  const int local_size = topology.local_size, me = topology.local_rank;
  const int64_t element_size = DataTypeSize(response.dtype);
  counts_.assign(local_size, 0);
  offsets_.assign(local_size, 0);
  for (int i = 0; i < local_size; ++i) {
    counts_[i] = static_cast<int>(count / local_size + (i < count % local_size ? 1 : 0));
    if (i > 0) offsets_[i] = offsets_[i - 1] + counts_[i - 1];
  }
  char* shard = nullptr;
  HORDE_RETURN_IF_ERROR(shard_.Reserve(std::max<int64_t>(counts_[me] * element_size, 1), &shard));
  const MPI_Datatype type = types().Datatype(response.dtype);
  const MPI_Comm local = context()->local();
  timeline().ActivityStart(response.names, "LOCAL_REDUCESCATTER");
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Reduce_scatter(data, shard, counts_.data(), type,
                                  types().Op(response.dtype, response.reduce_op), local),
               "MPI_Reduce_scatter (within the host)"));
  // Across the hosts, as the plan says for a shard: trees, ring or MPI's allreduce.
  HORDE_RETURN_IF_ERROR(CombineAsPlanned(shard, counts_[me], response));
  std::memcpy(data + offsets_[me] * element_size, shard, counts_[me] * element_size);
  timeline().ActivityStart(response.names, "LOCAL_ALLGATHER");
  return CheckMpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(),
                                 offsets_.data(), type, local),
                  "MPI_Allgatherv (within the host)");
}

}  // namespace mpi
}  // namespace horde
