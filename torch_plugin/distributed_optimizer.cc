#include "horde/torch/distributed_optimizer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <exception>
#include <unordered_map>

#include "core/process_set_registry.h"
#include "horde/basics.h"
#include "horde/error.h"
#include "horde/torch/collectives.h"

namespace horde {
namespace torch {
namespace {

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("DistributedOptimizer: " + message));
}

// Makes `reduced` the parameter's gradient, in place when it has one (as Horovod does),
// so references to .grad stay valid.
void WriteGradient(const at::Tensor& param, const at::Tensor& reduced) {
  c10::NoGradGuard no_grad;
  const at::Tensor& grad = param.grad();
  if (!grad.defined()) {
    param.mutable_grad() = reduced;
  } else if (!grad.is_same(reduced)) {
    grad.copy_(reduced);
  }
}

}  // namespace

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                                           const NamedParameters& named_parameters,
                                           int backward_passes_per_step, ReduceOp op,
                                           ProcessSet process_set)
    : optimizer_(optimizer),
      backward_passes_per_step_(backward_passes_per_step),
      op_(op),
      process_set_(std::move(process_set)) {
  // Failing here beats failing in the middle of backward.
  if (!is_initialized()) {
    throw InvalidArgument("horde has not been initialized; call horde::init() first");
  }
  if (!process_set_.included()) {
    throw InvalidArgument("rank " + std::to_string(rank()) + " is not in process set " +
                          std::to_string(process_set_.id()) + " (ranks " +
                          RanksString(process_set_.ranks()) + ")");
  }
  if (backward_passes_per_step < 1) {
    throw InvalidArgument("backward_passes_per_step must be at least 1, got " +
                          std::to_string(backward_passes_per_step));
  }
  AddSlots(named_parameters);
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].hook = slots_[i].param.register_hook(
        [this, i](const at::Tensor& grad) { OnGradient(slots_[i], grad); });
  }
}

DistributedOptimizer::~DistributedOptimizer() {
  for (Slot& slot : slots_) slot.param.remove_hook(slot.hook);
}

void DistributedOptimizer::AddSlots(const NamedParameters& named_parameters) {
  std::unordered_map<const void*, std::string> names;
  for (const auto& item : named_parameters) {
    names.emplace(item.value().unsafeGetTensorImpl(), item.key());
  }
  for (const auto& group : optimizer_.param_groups()) {
    for (const at::Tensor& param : group.params()) {
      if (!param.requires_grad()) continue;
      auto it = names.find(param.unsafeGetTensorImpl());
      if (it == names.end()) {
        throw InvalidArgument(
            "a parameter of the optimizer is missing from named_parameters; pass every "
            "parameter it steps, e.g. module->named_parameters()");
      }
      Slot slot;
      slot.param = param;
      slot.name = "grad." + it->second;
      slots_.push_back(std::move(slot));
    }
  }
}

void DistributedOptimizer::OnGradient(Slot& slot, const at::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mu_);
  synchronized_ = false;
  if (slot.reduction.valid()) {
    throw InvalidArgument("the gradient of '" + slot.name + "' was computed more than " +
                          std::to_string(backward_passes_per_step_) +
                          " time(s) (backward_passes_per_step) before step() or synchronize()");
  }
  if (++slot.passes < backward_passes_per_step_) return;  // torch accumulates it in .grad
  // This hook runs before torch adds `grad` into .grad: reduce what .grad is about to
  // hold, the sum over this step's passes. torch's own sum is overwritten at step().
  c10::NoGradGuard no_grad;
  const at::Tensor& accumulated = slot.param.grad();
  at::Tensor local = accumulated.defined() ? accumulated + grad : grad.clone();
  slot.reduction = allreduce_async_(local, Options(slot));
}

AllreduceOptions DistributedOptimizer::Options(const Slot& slot) const {
  return {op_, slot.name, 1.0, 1.0, process_set_};
}

void DistributedOptimizer::StartMissingReductions() {
  c10::NoGradGuard no_grad;
  for (Slot& slot : slots_) {
    if (slot.reduction.valid()) continue;
    if (!slot.param.grad().defined()) slot.param.mutable_grad() = at::zeros_like(slot.param);
    slot.reduction = allreduce_async_(slot.param.grad(), Options(slot));
  }
}

void DistributedOptimizer::synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  // Every reduction is waited for, even after one failed, so the next step starts clean.
  std::exception_ptr first_error;
  try {
    StartMissingReductions();
  } catch (...) {
    first_error = std::current_exception();
  }
  for (Slot& slot : slots_) {
    slot.passes = 0;
    if (!slot.reduction.valid()) continue;
    try {
      WriteGradient(slot.param, slot.reduction.wait());
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  synchronized_ = true;
}

void DistributedOptimizer::step() {
  bool synchronized;
  {
    std::lock_guard<std::mutex> lock(mu_);
    synchronized = synchronized_;
  }
  if (!synchronized) synchronize();
  optimizer_.step();
  std::lock_guard<std::mutex> lock(mu_);
  synchronized_ = false;
}

void DistributedOptimizer::zero_grad() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Slot& slot : slots_) {
      if (slot.passes > 0) {
        throw InvalidArgument(
            "zero_grad() was called after backward() and before step() or synchronize(), "
            "which would discard gradients being reduced");
      }
    }
  }
  optimizer_.zero_grad();
}

}  // namespace torch
}  // namespace horde
