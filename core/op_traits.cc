#include "core/op_traits.h"

namespace horde {
namespace {

constexpr uint32_t kReduction = kAgreeShape | kAgreeReduceOp | kAgreeScale;

// One entry per OpType, in its order.
constexpr OpTraits kOpTraits[] = {
    // op, name, agreed, fusion, per name, with joined ranks, own phases, renumbers,
    // has an implementation
    {OpType::kAllreduce, "allreduce", kReduction, Fusion::kTensor, PerName::kTensorSize, true, true,
     false, true},
    {OpType::kAllgather, "allgather", kAgreeRowShape, Fusion::kGatheredRows,
     PerName::kEveryRankRows, false, false, false, true},
    {OpType::kBroadcast, "broadcast", kAgreeRoot | kAgreeShape, Fusion::kNone, PerName::kNothing,
     false, false, false, true},
    {OpType::kJoin, "join", 0, Fusion::kNone, PerName::kNothing, false, false, true, false},
    {OpType::kAlltoall, "alltoall", kAgreeRowShape, Fusion::kNone, PerName::kNothing, false, false,
     false, true},
    {OpType::kReducescatter, "reducescatter", kReduction, Fusion::kTensor, PerName::kNothing, false,
     false, false, true},
    {OpType::kBarrier, "barrier", 0, Fusion::kNone, PerName::kNothing, false, false, true, true},
};

static_assert(sizeof(kOpTraits) / sizeof(kOpTraits[0]) == kNumOpTypes,
              "kOpTraits needs exactly one entry per OpType");

constexpr bool InOpTypeOrder() {
  for (int i = 0; i < kNumOpTypes; ++i) {
    if (static_cast<int>(kOpTraits[i].op) != i) return false;
  }
  return true;
}
static_assert(InOpTypeOrder(), "kOpTraits[i] must describe OpType i");

// FusionBytes counts gathered rows from Response::first_dims.
constexpr bool GatheredRowsAreCarried() {
  for (const OpTraits& t : kOpTraits) {
    if (t.fusion == Fusion::kGatheredRows && t.per_name != PerName::kEveryRankRows) return false;
  }
  return true;
}
static_assert(GatheredRowsAreCarried(), "Fusion::kGatheredRows needs PerName::kEveryRankRows");

}  // namespace

const OpTraits& TraitsOf(OpType op) { return kOpTraits[static_cast<int>(op)]; }

const char* OpTypeName(OpType op) {
  const int i = static_cast<int>(op);
  return i < kNumOpTypes ? kOpTraits[i].name : "unknown";
}

int64_t FusionBytes(const Response& response, const Request& agreed) {
  switch (TraitsOf(response.op).fusion) {
    case Fusion::kNone: return 0;
    case Fusion::kTensor: return agreed.size_bytes();
    case Fusion::kGatheredRows: {
      int64_t rows = 0;
      for (int64_t d : response.first_dims) rows += d;
      return agreed.row_bytes() * rows;
    }
  }
  return 0;
}

}  // namespace horde
