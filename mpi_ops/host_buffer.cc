#include "mpi_ops/host_buffer.h"

#include <new>

#include "core/fusion_planner.h"

namespace horde {

char* HostBuffer::Reserve(int64_t bytes) {
  if (bytes > capacity_) {
    int64_t capacity = AlignToFusion(bytes > 2 * capacity_ ? bytes : 2 * capacity_);
    void* p = std::aligned_alloc(kFusionAlignment, static_cast<size_t>(capacity));
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<char*>(p));
    capacity_ = capacity;
  }
  return data_.get();
}

}  // namespace horde
