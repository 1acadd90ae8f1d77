// Adasum allreduce through the runtime over real MPI, without torch: run under mpirun
// with 2 and 4 ranks. Every test makes the same calls on every rank; each rank computes
// every rank's input, so it can compute the expected result on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/api.h"
#include "core/host_tensor.h"
#include "mpi_ops/adasum_math.h"
#include "mpi_ops/half_float.h"
#include "tests/mpi/pending_op.h"

namespace horde {
namespace {

using adasum::kZeroNorm2;
using Pending = testing::PendingOp;

int Rank() { return CurrentRuntime()->topology().rank; }
int Size() { return CurrentRuntime()->topology().size; }

Request Adasum(const std::string& name, const std::shared_ptr<Tensor>& t) {
  Request r;
  r.op = OpType::kAllreduce;
  r.name = name;
  r.reduce_op = ReduceOp::kAdasum;
  r.dtype = t->dtype();
  r.shape = t->shape();
  return r;
}

TensorEntry InPlace(const std::shared_ptr<Tensor>& t, const std::shared_ptr<Pending>& pending) {
  TensorEntry entry;
  entry.input = t;
  entry.output = t;
  entry.callback = pending->Callback();
  return entry;
}

// Reduces `tensors` in place as one group (fused, if small) and waits.
void RunGroup(const std::string& group, const std::vector<std::shared_ptr<HostTensor>>& tensors) {
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  std::vector<std::shared_ptr<Pending>> pending;
  for (size_t i = 0; i < tensors.size(); ++i) {
    pending.push_back(std::make_shared<Pending>());
    requests.push_back(Adasum("", tensors[i]));
    entries.push_back(InPlace(tensors[i], pending.back()));
  }
  ASSERT_TRUE(CurrentRuntime()->EnqueueGroup(group, &requests, &entries).ok());
  for (auto& p : pending) ASSERT_TRUE(p->Wait().ok()) << p->status.message();
}

// The expected result, computed independently of mpi_ops/adasum_math: rank pairs (0,1),
// (2,3), ... combine first, then their results pairwise, in float64.
std::vector<double> Reference(std::vector<std::vector<double>> vectors) {
  while (vectors.size() > 1) {
    std::vector<std::vector<double>> next;
    for (size_t k = 0; k < vectors.size(); k += 2) {
      const auto& a = vectors[k];
      const auto& b = vectors[k + 1];
      double ab = 0, aa = 0, bb = 0;
      for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
      const double ca = aa >= kZeroNorm2 ? 1 - ab / (2 * aa) : 1,
                   cb = bb >= kZeroNorm2 ? 1 - ab / (2 * bb) : 1;
      std::vector<double> c(a.size());
      for (size_t i = 0; i < a.size(); ++i) c[i] = ca * a[i] + cb * b[i];
      next.push_back(c);
    }
    vectors = next;
  }
  return vectors[0];
}

std::vector<double> RandomVector(int rank, int salt, int64_t n) {
  std::mt19937_64 generator(rank * 7919 + salt);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = uniform(generator);
  return v;
}

std::shared_ptr<HostTensor> Float64Tensor(const std::vector<double>& values) {
  auto t = std::make_shared<HostTensor>(DataType::kFloat64,
                                        TensorShape{static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t->as<double>());
  return t;
}

void ExpectNear(const std::shared_ptr<HostTensor>& t, const std::vector<double>& expected,
                const char* what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(t->as<double>()[i], expected[i], 1e-12 * (1 + std::fabs(expected[i])))
        << what << " [" << i << "]";
  }
}

TEST(MpiAdasum, RandomTensorsOfOddLengthsMatchTheReference) {
  // Lengths that do not halve evenly, and one above the in-place threshold (1 MiB).
  for (int64_t n : {1, 3, 5, 17, 1000, 140001}) {
    std::vector<std::vector<double>> inputs;
    for (int r = 0; r < Size(); ++r) inputs.push_back(RandomVector(r, static_cast<int>(n), n));
    auto t = Float64Tensor(inputs[Rank()]);
    auto pending = std::make_shared<Pending>();
    ASSERT_TRUE(CurrentRuntime()
                    ->Enqueue(Adasum("adasum.odd." + std::to_string(n), t), InPlace(t, pending))
                    .ok());
    ASSERT_TRUE(pending->Wait().ok()) << pending->status.message();
    ExpectNear(t, Reference(inputs), "odd length");
  }
}

TEST(MpiAdasum, FusedTensorsGetTheirOwnCoefficients) {
  // Identical on every rank (result: itself), one-hot per rank (the sum), empty, a
  // scalar and random ones, in one fused buffer.
  std::vector<std::vector<std::vector<double>>> inputs(Size());
  for (int r = 0; r < Size(); ++r) {
    std::vector<double> one_hot(2 * Size(), 0.0);
    one_hot[2 * r] = one_hot[2 * r + 1] = r + 1.0;
    inputs[r] = {{0.25, -1.5, 3.0},    one_hot, {}, {r + 0.5}, RandomVector(r, 1, 9),
                 RandomVector(r, 2, 4)};
  }
  std::vector<std::shared_ptr<HostTensor>> tensors;
  for (const auto& values : inputs[Rank()]) tensors.push_back(Float64Tensor(values));
  const RuntimeStats before = CurrentRuntime()->stats();
  RunGroup("adasum.fused", tensors);
  EXPECT_EQ(CurrentRuntime()->stats().fused_tensors - before.fused_tensors,
            static_cast<int64_t>(tensors.size()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<std::vector<double>> per_rank;
    for (int r = 0; r < Size(); ++r) per_rank.push_back(inputs[r][i]);
    ExpectNear(tensors[i], Reference(per_rank), ("tensor " + std::to_string(i)).c_str());
  }
  EXPECT_EQ(tensors[0]->as<double>()[1], -1.5);
  for (int r = 0; r < Size(); ++r) EXPECT_EQ(tensors[1]->as<double>()[2 * r], r + 1.0);
}

TEST(MpiAdasum, Float16NearItsLimitStaysFinite) {
  auto t = std::make_shared<HostTensor>(DataType::kFloat16, TensorShape{2, 3});
  const float values[] = {60000, -60000, 30000, 65504, 0, 1};
  for (int i = 0; i < 6; ++i) t->as<uint16_t>()[i] = FloatToFloat16(values[i]);
  RunGroup("adasum.fp16", {t});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Float16ToFloat(t->as<uint16_t>()[i]), values[i]) << i;
}

TEST(MpiAdasum, IntegerTensorsAndReducescatterAreRefusedAtSubmit) {
  auto ints = std::make_shared<HostTensor>(DataType::kInt32, TensorShape{4});
  auto pending = std::make_shared<Pending>();
  Status s = CurrentRuntime()->Enqueue(Adasum("adasum.int", ints), InPlace(ints, pending));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Adasum is not defined for int32 tensors"), std::string::npos)
      << s.message();

  auto floats = std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{4});
  Request scatter = Adasum("adasum.scatter", floats);
  scatter.op = OpType::kReducescatter;
  s = CurrentRuntime()->Enqueue(scatter, InPlace(floats, pending));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);  // Python: NotImplementedError, as Horovod
  EXPECT_NE(s.message().find("Adasum is not supported for reducescatter"), std::string::npos)
      << s.message();
  // Nothing was queued: the next collective runs.
  RunGroup("adasum.after.errors", {floats});
}

}  // namespace
}  // namespace horde
