#include "mpi_ops/mpi_allreduce.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/fusion_planner.h"
#include "mpi_ops/host_scale.h"

namespace horde {
namespace mpi {

Status MpiAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const int64_t element_size = DataTypeSize(response.dtype);
  if (entries.size() == 1) {
    TensorEntry& e = entries[0];
    void* out = e.output->data();
    const int64_t bytes = e.input->size_bytes();
    if (out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    return ReduceInPlace(out, bytes / element_size, response);
  }

  std::vector<int64_t> sizes;
  for (auto& e : entries) sizes.push_back(e.input->size_bytes());
  int64_t total = 0;
  std::vector<int64_t> offsets = FusionOffsets(sizes, &total);
  char* buffer = fusion_buffer_.Reserve(total);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (sizes[i] > 0) std::memcpy(buffer + offsets[i], entries[i].input->data(), sizes[i]);
    // Zero the alignment padding so scaling never sees garbage bit patterns.
    int64_t end = offsets[i] + sizes[i];
    int64_t next = i + 1 < entries.size() ? offsets[i + 1] : end;
    std::memset(buffer + end, 0, next - end);
  }
  HORDE_RETURN_IF_ERROR(ReduceInPlace(buffer, total / element_size, response));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (sizes[i] > 0) std::memcpy(entries[i].output->data(), buffer + offsets[i], sizes[i]);
  }
  return Status::Ok();
}

Status MpiAllreduce::ReduceInPlace(void* data, int64_t count, const Response& response) {
  double postscale = response.postscale;
  if (response.reduce_op == ReduceOp::kAverage) postscale /= context_->topology().size;
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
  if (postscale != 1.0) ScaleHostBuffer(data, count, response.dtype, postscale);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
