#include "tests/mpi/collective_runner.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/api.h"
#include "tests/mpi/host_allocator.h"

namespace horde {
namespace testing {
namespace {

// Completes into `op`, and lets the op allocate its output on the host into op->output.
void Attach(const std::shared_ptr<PendingOp>& op, TensorEntry* entry) {
  if (!entry->allocate_output) {
    OutputAllocator host = HostAllocator(entry->input->dtype());
    entry->allocate_output = [host, op](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
      HORDE_RETURN_IF_ERROR(host(shape, out));
      op->output = *out;
      return Status::Ok();
    };
  }
  entry->callback = op->Callback();
}

void Describe(const TensorEntry& entry, Request* request) {
  request->dtype = entry.input->dtype();
  request->shape = entry.input->shape();
}

}  // namespace

int Rank() { return CurrentRuntime()->topology().rank; }
int Size() { return CurrentRuntime()->topology().size; }

const std::vector<Extent>& AllExtents() {
  static const std::vector<Extent> all = {Extent::kEmpty, Extent::kScalar, Extent::kOdd,
                                          Extent::kLarge};
  return all;
}

TensorShape ShapeOf(Extent extent, DataType dtype) {
  switch (extent) {
    case Extent::kEmpty: return {0};
    case Extent::kScalar: return {};
    case Extent::kOdd: return {13};
    case Extent::kLarge: return {LargerThanFusionBuffer(dtype)};
  }
  return {};
}

int64_t LargerThanFusionBuffer(DataType dtype) {
  return kTestFusionThresholdBytes / DataTypeSize(dtype) + 37;
}

std::shared_ptr<PendingOp> Submit(Request request, TensorEntry entry) {
  auto op = std::make_shared<PendingOp>();
  Describe(entry, &request);
  Attach(op, &entry);
  const Status s = CurrentRuntime()->Enqueue(std::move(request), std::move(entry));
  if (!s.ok()) op->Finish(s);
  return op;
}

std::shared_ptr<PendingOp> Submit(Request request, std::shared_ptr<Tensor> input,
                                  std::shared_ptr<Tensor> output) {
  return Submit(std::move(request), EntryOf(std::move(input), std::move(output)));
}

std::vector<std::shared_ptr<PendingOp>> SubmitGroup(const std::string& group,
                                                    std::vector<Request> requests,
                                                    std::vector<TensorEntry> entries) {
  std::vector<std::shared_ptr<PendingOp>> ops;
  for (size_t i = 0; i < entries.size(); ++i) {
    ops.push_back(std::make_shared<PendingOp>());
    Describe(entries[i], &requests[i]);
    Attach(ops.back(), &entries[i]);
  }
  const Status s = CurrentRuntime()->EnqueueGroup(group, &requests, &entries);
  if (!s.ok()) {
    for (auto& op : ops) op->Finish(s);
  }
  return ops;
}

void ExpectAllSucceed(const std::vector<std::shared_ptr<PendingOp>>& ops, const std::string& what) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Status s = ops[i]->Wait();
    EXPECT_TRUE(s.ok()) << what << " #" << i << ": " << s.message();
  }
}

RuntimeStats StatsNow() { return CurrentRuntime()->stats(); }

int64_t FusedTensorsSince(const RuntimeStats& before) {
  return StatsNow().fused_tensors - before.fused_tensors;
}

int64_t FusedResponsesSince(const RuntimeStats& before) {
  return StatsNow().fused_responses - before.fused_responses;
}

int64_t CacheHitsSince(const RuntimeStats& before) {
  return StatsNow().cache_hits - before.cache_hits;
}

TensorEntry EntryOf(std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output) {
  TensorEntry entry;
  entry.input = std::move(input);
  entry.output = std::move(output);
  return entry;
}

}  // namespace testing
}  // namespace horde
