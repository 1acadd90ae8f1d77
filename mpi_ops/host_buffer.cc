#include "mpi_ops/host_buffer.h"

#include <string>

#include "core/fusion_planner.h"

namespace horde {

void* AlignedAllocate(size_t alignment, size_t bytes) {
  return std::aligned_alloc(alignment, bytes);
}

Status HostBuffer::Reserve(int64_t bytes, char** data) {
  if (bytes > capacity_) {
    int64_t capacity = AlignToFusion(bytes > 2 * capacity_ ? bytes : 2 * capacity_);
    void* p = allocate_(kFusionAlignment, static_cast<size_t>(capacity));
    // Doubling may ask for more than needed: settle for exactly what was asked.
    if (p == nullptr && capacity > AlignToFusion(bytes)) {
      capacity = AlignToFusion(bytes);
      p = allocate_(kFusionAlignment, static_cast<size_t>(capacity));
    }
    if (p == nullptr) {
      return Status::Internal("could not allocate a host buffer of " + std::to_string(capacity) +
                              " bytes");
    }
    data_.reset(static_cast<char*>(p));
    capacity_ = capacity;
  }
  *data = data_.get();
  return Status::Ok();
}

}  // namespace horde
