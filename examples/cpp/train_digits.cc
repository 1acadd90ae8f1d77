// Data-parallel training of an MLP with horde's C++ API: each rank trains on its slice
// of every batch, DistributedOptimizer averages the gradients. Classifies the digits
// data set (scikit-learn's CSV, path as argument or Debian's), or, without that file,
// fits a synthetic regression. Rank 0 prints the loss per epoch and a held-out metric.
//
//   scripts/mpirun.sh -np 2 build/example_cpp/train_digits [digits.csv.gz]
#include <horde/torch.h>
#include <torch/torch.h>

#include <cstdio>
#include <exception>
#include <string>

#include "digits_csv.h"

namespace {

// Inputs and targets of every example: class indices, or one value to fit.
struct Task {
  std::string description;
  torch::Tensor inputs, targets;
  int64_t outputs;
  bool classification;
};

Task DigitsTask(Digits digits) {
  const auto n = static_cast<int64_t>(digits.labels.size());
  torch::Tensor inputs = torch::from_blob(digits.pixels.data(), {n, Digits::kPixels}).clone();
  torch::Tensor labels = torch::from_blob(digits.labels.data(), {n}, torch::kLong).clone();
  return {"digits, " + std::to_string(n) + " images", inputs, labels, 10, true};
}

Task SyntheticRegression() {
  torch::manual_seed(0);  // every rank builds the same data
  torch::Tensor inputs = torch::randn({2000, 16});
  torch::Tensor targets = torch::tanh(inputs.matmul(torch::randn({16, 1}) / 4)) +
                          0.05 * torch::randn({2000, 1});
  return {"synthetic regression, 2000 examples", inputs, targets, 1, false};
}

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t inputs, int64_t outputs)
      : hidden(register_module("hidden", torch::nn::Linear(inputs, 64))),
        out(register_module("out", torch::nn::Linear(64, outputs))) {}
  torch::Tensor forward(const torch::Tensor& x) { return out(torch::relu(hidden(x))); }
  torch::nn::Linear hidden, out;
};
TORCH_MODULE(Mlp);

torch::Tensor Loss(const Task& task, const torch::Tensor& output, const torch::Tensor& target) {
  namespace F = torch::nn::functional;
  return task.classification ? F::cross_entropy(output, target) : F::mse_loss(output, target);
}

// Trains on `train` (row indices into the task); returns the trained model.
Mlp Train(const Task& task, const torch::Tensor& train, int epochs) {
  const int rank = horde::rank(), size = horde::size();
  const int64_t rank_batch = 16, global_batch = rank_batch * size;
  Mlp model(task.inputs.size(1), task.outputs);
  horde::torch::broadcast_parameters(model, 0);  // every rank starts from rank 0's weights
  // The gradient is averaged over a batch `size` times larger: scale the rate with it.
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.02 * size).momentum(0.9));
  horde::torch::DistributedOptimizer optimizer(sgd, model->named_parameters());

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    torch::manual_seed(epoch);  // the same shuffle on every rank
    torch::Tensor order = train.index_select(0, torch::randperm(train.size(0)));
    const int64_t steps = order.size(0) / global_batch;
    torch::Tensor loss_sum = torch::zeros({});
    for (int64_t step = 0; step < steps; ++step) {
      torch::Tensor rows = order.narrow(0, step * global_batch + rank * rank_batch, rank_batch);
      optimizer.zero_grad();
      torch::Tensor loss = Loss(task, model->forward(task.inputs.index_select(0, rows)),
                                task.targets.index_select(0, rows));
      loss.backward();
      optimizer.step();
      loss_sum += loss.detach();
    }
    const double loss =
        horde::torch::allreduce((loss_sum / steps).reshape({1}), {horde::Average}).item<double>();
    if (rank == 0) std::printf("epoch %2d: loss %.4f\n", epoch, loss);
  }
  return model;
}

// Accuracy, or mean squared error, over `rows`; each rank evaluates a share of them.
double HeldOutMetric(const Task& task, Mlp& model, const torch::Tensor& rows) {
  torch::NoGradGuard no_grad;
  torch::Tensor mine = rows.index_select(
      0, torch::arange(horde::rank(), rows.size(0), horde::size(), torch::kLong));
  torch::Tensor output = model->forward(task.inputs.index_select(0, mine));
  torch::Tensor target = task.targets.index_select(0, mine);
  torch::Tensor score = task.classification ? output.argmax(1).eq(target).sum().to(torch::kDouble)
                                            : (output - target).pow(2).sum().to(torch::kDouble);
  torch::Tensor total = horde::torch::allreduce(score.reshape({1}), {horde::Sum});
  return total.item<double>() / rows.size(0);
}

bool WeightsIdenticalOnAllRanks(Mlp& model) {
  torch::Tensor mine = torch::nn::utils::parameters_to_vector(model->parameters()).detach();
  torch::Tensor all = horde::torch::allgather(mine.unsqueeze(0));
  return all.eq(mine).all().item<bool>();
}

int Run(int argc, char** argv) {
  horde::init();
  const std::string path = argc > 1 ? argv[1] : kDebianDigitsCsv;
  Digits digits;
  Task task = ReadDigitsCsv(path, &digits) ? DigitsTask(std::move(digits)) : SyntheticRegression();
  const bool root = horde::rank() == 0;
  if (root) std::printf("training on %d rank(s): %s\n", horde::size(), task.description.c_str());

  torch::manual_seed(0);  // the same 80/20 split on every rank
  torch::Tensor order = torch::randperm(task.inputs.size(0));
  const int64_t n_train = order.size(0) * 4 / 5;
  Mlp model = Train(task, order.narrow(0, 0, n_train), task.classification ? 20 : 30);
  const double metric = HeldOutMetric(task, model,
                                      order.narrow(0, n_train, order.size(0) - n_train));
  const bool identical = WeightsIdenticalOnAllRanks(model);
  if (root) {
    std::printf("held-out %s: %.4f\n", task.classification ? "accuracy" : "mean squared error",
                metric);
    std::printf("weights identical on all ranks: %s\n", identical ? "true" : "false");
  }
  horde::shutdown();
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {  // horde::Error, torch's c10::Error, a bad CSV line
    std::fprintf(stderr, "train_digits: %s\n", e.what());
    return 1;
  }
}
