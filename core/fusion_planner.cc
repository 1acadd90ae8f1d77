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

std::vector<Response> FusionPlanner::Plan(std::vector<PlannedResponse>&& ready) const {
  struct Group {
    Response response;
    int64_t end = 0;  // bytes used, the last tensor unpadded
    bool open = true;
  };
  std::vector<Group> groups;
  for (auto& item : ready) {
    if (!Fusable(item.response) || item.bytes >= in_place_bytes_) {
      groups.push_back({std::move(item.response), 0, false});
      continue;
    }
    bool placed = false;
    for (auto& g : groups) {
      if (!g.open || !EqualIn<kFusionKey>(g.response, item.response)) continue;
      int64_t new_end = AlignToFusion(g.end) + item.bytes;
      if (new_end > threshold_) continue;
      Append(item.response, &g.response);
      g.end = new_end;
      placed = true;
      break;
    }
    if (!placed) {
      bool fits = threshold_ > 0 && item.bytes <= threshold_;
      groups.push_back({std::move(item.response), item.bytes, fits});
    }
  }
  std::vector<Response> out;
  out.reserve(groups.size());
  for (auto& g : groups) out.push_back(std::move(g.response));
  return out;
}

}  // namespace horde
