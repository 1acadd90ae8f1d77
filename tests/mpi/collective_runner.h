#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/request.h"
#include "core/runtime_stats.h"
#include "core/tensor.h"
#include "tests/mpi/pending_op.h"

namespace horde {
namespace testing {

// Submitting operations to the current runtime (started by collective_test_main.cc)
// the way a framework adapter does, without one: every rank makes the same calls.

// The fusion threshold the collective tests run with: small, so that a tensor "larger
// than the fusion buffer" costs a few KiB. collective_test_main.cc sets it.
constexpr int64_t kTestFusionThresholdBytes = 4096;

int Rank();
int Size();

// The sizes every collective is tested at.
enum class Extent {
  kEmpty,   // 0 elements
  kScalar,  // 1 element, no dimensions
  kOdd,     // 13 elements
  kLarge,   // an odd count of elements larger than the fusion buffer
};
const std::vector<Extent>& AllExtents();
// A one-dimensional shape (none for kScalar) of `extent` in `dtype`.
TensorShape ShapeOf(Extent extent, DataType dtype);
// More elements than the fusion buffer holds, an odd count.
int64_t LargerThanFusionBuffer(DataType dtype);

// Submits `request` on `entry` (its input, output, splits as given; dtype and shape are
// taken from the input). An output the operation allocates goes to the returned op's
// `output`. A request refused at submit completes at once with that status.
std::shared_ptr<PendingOp> Submit(Request request, TensorEntry entry);
// The same for an entry of just an input and an output (null: the op allocates it).
std::shared_ptr<PendingOp> Submit(Request request, std::shared_ptr<Tensor> input,
                                  std::shared_ptr<Tensor> output);

// Submits `requests` on `entries` as one group, which the runtime releases in one round
// (so fusable members fuse).
std::vector<std::shared_ptr<PendingOp>> SubmitGroup(const std::string& group,
                                                    std::vector<Request> requests,
                                                    std::vector<TensorEntry> entries);

// Waits for every op; a failed one fails the test, naming `what` and the op's index.
void ExpectAllSucceed(const std::vector<std::shared_ptr<PendingOp>>& ops, const std::string& what);

// Counters since `before`: tensors that went through fused responses, and those
// responses.
int64_t FusedTensorsSince(const RuntimeStats& before);
int64_t FusedResponsesSince(const RuntimeStats& before);
// Responses that came from the response cache since `before`.
int64_t CacheHitsSince(const RuntimeStats& before);
RuntimeStats StatsNow();

// An entry of `input` and `output` for SubmitGroup.
TensorEntry EntryOf(std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output);

}  // namespace testing
}  // namespace horde
