#include "core/fusion_planner.h"

#include "core/message_fields.h"
#include "core/op_traits.h"

namespace horde {
namespace {

bool Fusable(const Response& r) {
  return r.kind == Response::Kind::kCollective && TraitsOf(r.op).fusion != Fusion::kNone;
}

// Adds `single`'s one tensor to the fused response `into`.
void Append(const Response& single, Response* into) {
  FieldList<Response>::ForEach([&](auto field) {
    if constexpr ((decltype(field)::roles & kPerName) != 0) {
      auto& fused = into->*field.member;
      fused.insert(fused.end(), (single.*field.member).begin(), (single.*field.member).end());
    }
  });
}

}  // namespace

int64_t AlignToFusion(int64_t bytes) {
  return (bytes + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment;
}

std::vector<int64_t> FusionOffsets(const std::vector<int64_t>& sizes, int64_t* total) {
  std::vector<int64_t> offsets;
  FusionOffsets(sizes, &offsets, total);
  return offsets;
}

void FusionOffsets(const std::vector<int64_t>& sizes, std::vector<int64_t>* offsets,
                   int64_t* total) {
  offsets->clear();
  offsets->reserve(sizes.size());
  int64_t end = 0;
  for (int64_t size : sizes) {
    int64_t offset = AlignToFusion(end);
    offsets->push_back(offset);
    end = offset + size;
  }
  *total = end;
}

std::vector<Response> FusionPlanner::Plan(const std::vector<PlannedResponse>& ready) {
  std::vector<Response> out;
  Plan(ready, ready.size(), &out);
  return out;
}

void FusionPlanner::Plan(const std::vector<PlannedResponse>& ready, size_t count,
                         std::vector<Response>* out) {
  packs_.clear();
  for (size_t i = 0; i < count; ++i) {
    const PlannedResponse& item = ready[i];
    const bool fusable = Fusable(item.response) && item.bytes < in_place_bytes_;
    bool placed = false;
    for (size_t p = 0; fusable && p < packs_.size() && !placed; ++p) {
      Pack& pack = packs_[p];
      if (!pack.open || !EqualIn<kFusionKey>((*out)[p], item.response)) continue;
      const int64_t new_end = AlignToFusion(pack.end) + item.bytes;
      if (new_end > threshold_) continue;
      Append(item.response, &(*out)[p]);
      pack.end = new_end;
      placed = true;
    }
    if (placed) continue;
    if (out->size() <= packs_.size()) {
      out->emplace_back();
      if (!spare_.empty()) {
        out->back() = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    (*out)[packs_.size()] = item.response;
    packs_.push_back(
        {fusable ? item.bytes : 0, fusable && threshold_ > 0 && item.bytes <= threshold_});
  }
  while (out->size() > packs_.size()) {
    spare_.push_back(std::move(out->back()));
    out->pop_back();
  }
}

}  // namespace horde
