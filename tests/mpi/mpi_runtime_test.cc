// The runtime over real MPI, without torch: run under mpirun with 2 and 4 ranks.
// Every test makes the same collective calls on every rank.
#include <gtest/gtest.h>

#include "core/api.h"
#include "core/row_split.h"
#include "mpi_ops/half_float.h"
#include "mpi_ops/make_runtime.h"
#include "tests/mpi/host_allocator.h"
#include "tests/mpi/pending_op.h"

namespace horde {
namespace {

using testing::HostAllocator;

using Pending = testing::PendingOp;

// An entry on `input` that completes `pending`; an output the operation allocates (on
// the host) is also stored in *allocated when that is given.
TensorEntry EntryOn(std::shared_ptr<Tensor> input, const std::shared_ptr<Pending>& pending,
                    std::shared_ptr<Tensor>* allocated = nullptr) {
  TensorEntry entry;
  OutputAllocator host = HostAllocator(input->dtype());
  entry.input = std::move(input);
  entry.allocate_output = [host, allocated](const TensorShape& shape,
                                            std::shared_ptr<Tensor>* out) {
    HORDE_RETURN_IF_ERROR(host(shape, out));
    if (allocated) *allocated = *out;
    return Status::Ok();
  };
  entry.callback = pending->Callback();
  return entry;
}

std::shared_ptr<Pending> Submit(Request request, std::shared_ptr<Tensor> input,
                                std::shared_ptr<Tensor> output,
                                std::shared_ptr<Tensor>* gathered = nullptr) {
  auto pending = std::make_shared<Pending>();
  request.dtype = input->dtype();
  request.shape = input->shape();
  TensorEntry entry = EntryOn(input, pending, gathered);
  entry.name = request.name;
  entry.output = output;
  Status s = CurrentRuntime()->Enqueue(std::move(request), std::move(entry));
  if (!s.ok()) pending->Finish(s);
  return pending;
}

// Queues `requests` on `inputs` as one group, waits for all, and expects them to have
// run fused; returns the outputs the operations allocated.
std::vector<std::shared_ptr<Tensor>> RunFusedGroup(
    const std::string& group, std::vector<Request> requests,
    const std::vector<std::shared_ptr<Tensor>>& inputs) {
  std::vector<std::shared_ptr<Tensor>> outputs(inputs.size());
  std::vector<std::shared_ptr<Pending>> pending;
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < inputs.size(); ++i) {
    pending.push_back(std::make_shared<Pending>());
    entries.push_back(EntryOn(inputs[i], pending.back(), &outputs[i]));
    requests[i].dtype = inputs[i]->dtype();
    requests[i].shape = inputs[i]->shape();
  }
  const RuntimeStats before = CurrentRuntime()->stats();
  EXPECT_TRUE(CurrentRuntime()->EnqueueGroup(group, &requests, &entries).ok());
  for (auto& p : pending) EXPECT_TRUE(p->Wait().ok()) << p->status.message();
  EXPECT_EQ(CurrentRuntime()->stats().fused_tensors - before.fused_tensors,
            static_cast<int64_t>(inputs.size()));
  return outputs;
}

Request Allreduce(const std::string& name, ReduceOp op) {
  Request r;
  r.op = OpType::kAllreduce;
  r.name = name;
  r.reduce_op = op;
  return r;
}

int Rank() { return CurrentRuntime()->topology().rank; }
int Size() { return CurrentRuntime()->topology().size; }

TEST(MpiRuntime, Float16SumComputesInFloat) {
  auto t = std::make_shared<HostTensor>(DataType::kFloat16, TensorShape{3, 5});
  for (int i = 0; i < 15; ++i) t->as<uint16_t>()[i] = FloatToFloat16(0.5f * (Rank() + 1) + i);
  ASSERT_TRUE(Submit(Allreduce("fp16.sum", ReduceOp::kSum), t, t)->Wait().ok());
  const int n = Size();
  for (int i = 0; i < 15; ++i) {
    float expected = 0.5f * n * (n + 1) / 2 + i * n;
    EXPECT_EQ(Float16ToFloat(t->as<uint16_t>()[i]), expected) << i;
  }
}

TEST(MpiRuntime, ManySmallTensorsOfMixedDtypesAreFusedPerDtype) {
  const RuntimeStats before = CurrentRuntime()->stats();
  std::vector<std::shared_ptr<HostTensor>> floats, ints;
  std::vector<std::shared_ptr<Pending>> pending;
  for (int i = 0; i < 60; ++i) {
    floats.push_back(std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{i % 7 + 1}));
    ints.push_back(std::make_shared<HostTensor>(DataType::kInt32, TensorShape{2, i % 5 + 1}));
    for (int k = 0; k < floats.back()->shape()[0]; ++k) floats.back()->as<float>()[k] = Rank() + i;
    for (int k = 0; k < 2 * (i % 5 + 1); ++k) ints.back()->as<int32_t>()[k] = Rank() * 10 + i;
    pending.push_back(Submit(Allreduce("mix.f" + std::to_string(i), ReduceOp::kMax), floats.back(),
                             floats.back()));
    pending.push_back(Submit(Allreduce("mix.i" + std::to_string(i), ReduceOp::kAverage),
                             ints.back(), ints.back()));
  }
  for (auto& p : pending) ASSERT_TRUE(p->Wait().ok()) << p->status.message();
  const int n = Size();
  for (int i = 0; i < 60; ++i) {
    EXPECT_EQ(floats[i]->as<float>()[0], n - 1 + i);
    // Average of r*10+i over ranks, truncated toward zero.
    EXPECT_EQ(ints[i]->as<int32_t>()[0], static_cast<int32_t>((10.0 * (n - 1) / 2) + i));
  }
  const RuntimeStats after = CurrentRuntime()->stats();
  EXPECT_GT(after.fused_tensors, before.fused_tensors);
  EXPECT_LT(after.responses_executed - before.responses_executed, 120);
}

// A group is released in one round, so its members fuse: here into one buffer of
// several pipeline chunks, with tensors straddling chunk boundaries.
TEST(MpiRuntime, AFusedBufferOfSeveralChunksIsReducedAndScaledExactly) {
  const int64_t elements = 262139;  // just under 1 MiB of floats, so still fused
  std::vector<std::shared_ptr<HostTensor>> tensors;
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  std::vector<std::shared_ptr<Pending>> pending;
  for (int i = 0; i < 13; ++i) {
    tensors.push_back(std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{elements}));
    for (int64_t k = 0; k < elements; ++k) tensors.back()->as<float>()[k] = Rank() + i + k % 7;
    Request r = Allreduce("", ReduceOp::kAverage);
    r.dtype = DataType::kFloat32;
    r.shape = {elements};
    r.prescale = 2.0;
    r.postscale = 0.5;
    requests.push_back(r);
    auto p = std::make_shared<Pending>();
    TensorEntry entry;
    entry.input = entry.output = tensors.back();
    entry.callback = p->Callback();
    entries.push_back(std::move(entry));
    pending.push_back(p);
  }
  const RuntimeStats before = CurrentRuntime()->stats();
  ASSERT_TRUE(CurrentRuntime()->EnqueueGroup("pipelined", &requests, &entries).ok());
  for (auto& p : pending) ASSERT_TRUE(p->Wait().ok()) << p->status.message();
  EXPECT_EQ(CurrentRuntime()->stats().fused_tensors - before.fused_tensors, 13);
  const int n = Size();
  for (int i = 0; i < 13; ++i) {
    for (int64_t k = 0; k < elements; k += 4099) {
      // Average of (r + i + k % 7) over ranks, times 2, then times 0.5.
      EXPECT_FLOAT_EQ(tensors[i]->as<float>()[k], (n - 1) / 2.0f + i + k % 7) << i << "," << k;
    }
    EXPECT_FLOAT_EQ(tensors[i]->as<float>()[elements - 1], (n - 1) / 2.0f + i + (elements - 1) % 7);
  }
}

TEST(MpiRuntime, AllgatherConcatenatesRowsOfDifferentCounts) {
  const int rows = Rank() + 1;
  auto t = std::make_shared<HostTensor>(DataType::kInt64, TensorShape{rows, 2});
  for (int i = 0; i < rows * 2; ++i) t->as<int64_t>()[i] = Rank() * 100 + i;
  Request r;
  r.op = OpType::kAllgather;
  r.name = "gather.rows";
  std::shared_ptr<Tensor> out;
  ASSERT_TRUE(Submit(r, t, nullptr, &out)->Wait().ok());
  const int n = Size();
  ASSERT_EQ(out->shape(), (TensorShape{n * (n + 1) / 2, 2}));
  auto* values = static_cast<int64_t*>(out->data());
  int at = 0;
  for (int rank = 0; rank < n; ++rank) {
    for (int i = 0; i < (rank + 1) * 2; ++i) EXPECT_EQ(values[at++], rank * 100 + i);
  }
}

// A group's allgathers fuse into one MPI_Allgatherv: rows of different shapes, counts
// that differ per rank (zero included) and a scalar all land where they belong.
TEST(MpiRuntime, FusedAllgathersPutEveryRanksRowsOfEveryTensorInPlace) {
  constexpr int kTensors = 9;
  const int n = Size();
  auto rows_of = [](int i, int rank) { return i == kTensors - 1 ? 1 : (rank + i) % 3; };
  auto cols_of = [](int i) { return i % 4 + 1; };
  std::vector<Request> requests(kTensors);
  std::vector<std::shared_ptr<Tensor>> inputs;
  for (int i = 0; i < kTensors; ++i) {
    // The last is a scalar: one row per rank.
    const TensorShape shape = i == kTensors - 1 ? TensorShape{}
                                                : TensorShape{rows_of(i, Rank()), cols_of(i)};
    auto input = std::make_shared<HostTensor>(DataType::kFloat32, shape);
    for (int64_t k = 0; k < NumElements(shape); ++k)
      input->as<float>()[k] = Rank() * 1000 + i * 10 + k;
    requests[i].op = OpType::kAllgather;
    inputs.push_back(input);
  }
  const std::vector<std::shared_ptr<Tensor>> outputs = RunFusedGroup("gathers", requests, inputs);
  for (int i = 0; i < kTensors; ++i) {
    const float* values = static_cast<const float*>(outputs[i]->data());
    int64_t at = 0;
    for (int rank = 0; rank < n; ++rank) {
      const int64_t elements = i == kTensors - 1 ? 1 : rows_of(i, rank) * cols_of(i);
      for (int64_t k = 0; k < elements; ++k) EXPECT_EQ(values[at++], rank * 1000 + i * 10 + k) << i;
    }
    EXPECT_EQ(at, NumElements(outputs[i]->shape())) << i;
  }
}

// A group's reducescatters fuse into one MPI_Ireduce_scatter: first dimensions that do
// not divide by the rank count (some ranks get no rows), different row shapes, scaling.
TEST(MpiRuntime, FusedReducescattersGiveEveryRankItsRowsOfEveryTensor) {
  constexpr int kTensors = 6;
  const int n = Size();
  auto first_dim = [n](int i) { return i == 0 ? n - 1 : 2 * n + i; };
  auto cols_of = [](int i) { return i % 3 + 1; };
  std::vector<Request> requests(kTensors);
  std::vector<std::shared_ptr<Tensor>> inputs;
  for (int i = 0; i < kTensors; ++i) {
    const TensorShape shape{first_dim(i), cols_of(i)};
    auto input = std::make_shared<HostTensor>(DataType::kFloat64, shape);
    for (int64_t k = 0; k < NumElements(shape); ++k)
      input->as<double>()[k] = (Rank() + 1) * (i * 100 + k);
    requests[i].op = OpType::kReducescatter;
    requests[i].reduce_op = ReduceOp::kAverage;
    requests[i].prescale = 2.0;
    requests[i].postscale = 3.0;
    inputs.push_back(input);
  }
  const std::vector<std::shared_ptr<Tensor>> outputs = RunFusedGroup("scatters", requests, inputs);
  // The average of (r + 1) * v over ranks, times 2 and 3: 6 * v * (n + 1) / 2.
  for (int i = 0; i < kTensors; ++i) {
    const std::vector<int64_t> rows = ReducescatterRows(first_dim(i), n);
    int64_t first_row = 0;
    for (int r = 0; r < Rank(); ++r) first_row += rows[r];
    ASSERT_EQ(outputs[i]->shape(), (TensorShape{rows[Rank()], cols_of(i)})) << i;
    const double* values = static_cast<const double*>(outputs[i]->data());
    for (int64_t k = 0; k < rows[Rank()] * cols_of(i); ++k) {
      EXPECT_DOUBLE_EQ(values[k], 3.0 * (n + 1) * (i * 100 + first_row * cols_of(i) + k))
          << i << "," << k;
    }
  }
}

TEST(MpiRuntime, BroadcastFromEveryRoot) {
  for (int root = 0; root < Size(); ++root) {
    auto t = std::make_shared<HostTensor>(DataType::kFloat64, TensorShape{4});
    for (int i = 0; i < 4; ++i) t->as<double>()[i] = Rank() + 0.25 * i;
    Request r;
    r.op = OpType::kBroadcast;
    r.name = "bcast." + std::to_string(root);
    r.root = root;
    ASSERT_TRUE(Submit(r, t, t)->Wait().ok());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(t->as<double>()[i], root + 0.25 * i);
  }
}

TEST(MpiRuntime, MismatchedShapesFailOnEveryRankAndTheNextOpWorks) {
  auto bad = std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{Rank() + 2});
  Status s = Submit(Allreduce("mismatch", ReduceOp::kSum), bad, bad)->Wait();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shape"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'mismatch'"), std::string::npos) << s.message();

  auto good = std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{1});
  good->as<float>()[0] = 1.0f;
  ASSERT_TRUE(Submit(Allreduce("after.mismatch", ReduceOp::kSum), good, good)->Wait().ok());
  EXPECT_EQ(good->as<float>()[0], static_cast<float>(Size()));
}

}  // namespace
}  // namespace horde
