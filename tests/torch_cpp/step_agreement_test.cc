// A step that fails on one rank only fails on every rank: the gradient path of the C++
// DistributedOptimizer (torch_ops::GradientReducer, which it wraps) with a compressor
// that raises on rank 1 alone, as an allocation failing on that rank would.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "horde/error.h"
#include "tests/torch_cpp/test_util.h"
#include "torch_plugin/gradient_reducer.h"

namespace {

using horde::torch_ops::GradientCompressor;
using horde::torch_ops::GradientReducer;
using horde::torch_ops::GradientReducerOptions;

// Passes gradients through, except that it raises once when armed.
class FlakyCompressor : public GradientCompressor {
 public:
  at::Tensor Compress(size_t, const at::Tensor& gradient) override {
    if (armed) {
      armed = false;
      throw std::runtime_error("rank " + std::to_string(horde::rank()) + " ran out of memory");
    }
    return gradient;
  }
  at::Tensor Decompress(size_t, const at::Tensor& reduced, const at::Tensor&) override {
    return reduced;
  }
  bool armed = false;
};

TEST(StepAgreement, AGradientThatFailsOnOneRankFailsTheStepOnEveryRank) {
  if (horde::size() < 2) GTEST_SKIP() << "needs two ranks";
  torch::manual_seed(3);
  torch::nn::Linear model(4, 2);
  horde::torch::broadcast_parameters(model, 0);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto compressor = std::make_shared<FlakyCompressor>();
  GradientReducerOptions options;
  options.compressor = compressor;
  GradientReducer reducer(model->parameters(), {"agree.weight", "agree.bias"}, options);
  std::vector<std::string> outcomes;
  for (int step = 0; step < 4; ++step) {
    compressor->armed = step == 1 && horde::rank() == 1;
    sgd.zero_grad();
    model->forward(torch::full({2, 4}, step + horde::rank() + 1.0)).pow(2).sum().backward();
    try {
      reducer.Synchronize();
      sgd.step();  // as DistributedOptimizer::step(): only after a successful reduction
      outcomes.push_back("ok");
    } catch (const std::exception& e) {
      outcomes.push_back(e.what());
    }
    for (const at::Tensor& p : model->parameters()) {
      EXPECT_TRUE(horde_test::SameOnAllRanks(p)) << "after step " << step;
    }
  }
  EXPECT_EQ(outcomes[0], "ok");
  EXPECT_EQ(outcomes[2], "ok");
  EXPECT_EQ(outcomes[3], "ok");
  if (horde::rank() == 1) {
    EXPECT_EQ(outcomes[1], "rank 1 ran out of memory");
  } else {
    EXPECT_NE(outcomes[1].find("the step failed on rank 1"), std::string::npos) << outcomes[1];
  }
}

}  // namespace
