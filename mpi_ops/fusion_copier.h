#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "mpi_ops/host_buffer.h"

namespace horde {
namespace mpi {

// Moves a fused response's tensors between their own memory and the fusion buffer, by
// byte range of the buffer, so a pipeline can copy one chunk while another is reduced.
// Layout as core/fusion_planner.h's FusionOffsets; alignment padding is zeroed on the
// way in so scaling never sees garbage bit patterns.
// Reusable: Layout() keeps its vectors' capacity, so an op that holds one allocates
// nothing per fused response once it has seen one as large.
class FusionCopier {
 public:
  // Lays the entries out (forgetting any earlier layout and buffer).
  void Layout(std::vector<TensorEntry>& entries);
  // Grows `buffer` to the layout's size and copies through it from then on.
  Status Bind(HostBuffer* buffer);

  int64_t total_bytes() const { return total_; }
  char* buffer() const { return buffer_; }
  // Copies the parts of the inputs that fall in buffer bytes [begin, end).
  void CopyIn(int64_t begin, int64_t end) const;
  // Copies buffer bytes [begin, end) to the parts of the outputs they belong to.
  void CopyOut(int64_t begin, int64_t end) const;

 private:
  std::vector<const char*> inputs_;
  std::vector<char*> outputs_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> offsets_;
  int64_t total_ = 0;
  char* buffer_ = nullptr;
};

}  // namespace mpi
}  // namespace horde
