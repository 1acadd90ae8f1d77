#include "mpi_ops/fusion_copier.h"

#include <algorithm>
#include <cstring>

#include "core/fusion_planner.h"

namespace horde {
namespace mpi {

void FusionCopier::Layout(std::vector<TensorEntry>& entries) {
  inputs_.clear();
  outputs_.clear();
  sizes_.clear();
  buffer_ = nullptr;
  for (auto& e : entries) {
    inputs_.push_back(static_cast<const char*>(e.input->data()));
    outputs_.push_back(static_cast<char*>(e.output->data()));
    sizes_.push_back(e.input->size_bytes());
  }
  FusionOffsets(sizes_, &offsets_, &total_);
}

Status FusionCopier::Bind(HostBuffer* buffer) { return buffer->Reserve(total_, &buffer_); }

void FusionCopier::CopyIn(int64_t begin, int64_t end) const {
  for (size_t i = 0; i < sizes_.size(); ++i) {
    const int64_t padded_end = i + 1 < sizes_.size() ? offsets_[i + 1] : offsets_[i] + sizes_[i];
    if (padded_end <= begin) continue;
    if (offsets_[i] >= end) break;
    const int64_t from = std::max(begin, offsets_[i]);
    const int64_t data_end = std::min(end, offsets_[i] + sizes_[i]);
    if (data_end > from)
      std::memcpy(buffer_ + from, inputs_[i] + (from - offsets_[i]), data_end - from);
    const int64_t pad_from = std::max(from, offsets_[i] + sizes_[i]);
    const int64_t pad_end = std::min(end, padded_end);
    if (pad_end > pad_from) std::memset(buffer_ + pad_from, 0, pad_end - pad_from);
  }
}

void FusionCopier::CopyOut(int64_t begin, int64_t end) const {
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (offsets_[i] + sizes_[i] <= begin) continue;
    if (offsets_[i] >= end) break;
    const int64_t from = std::max(begin, offsets_[i]);
    const int64_t to = std::min(end, offsets_[i] + sizes_[i]);
    if (to > from) std::memcpy(outputs_[i] + (from - offsets_[i]), buffer_ + from, to - from);
  }
}

}  // namespace mpi
}  // namespace horde
