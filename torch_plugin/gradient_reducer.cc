#include "torch_plugin/gradient_reducer.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/api.h"
#include "horde/error.h"
#include "torch_plugin/counted_allreduce.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {
namespace {

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("DistributedOptimizer: " + message));
}

}  // namespace

GradientReducer::GradientReducer(std::vector<at::Tensor> params, std::vector<std::string> names,
                                 GradientReducerOptions options)
    : options_(std::move(options)) {
  if (params.size() != names.size()) throw InvalidArgument("one name per parameter is needed");
  if (options_.backward_passes_per_step < 1) {
    throw InvalidArgument("backward_passes_per_step must be at least 1, got " +
                          std::to_string(options_.backward_passes_per_step));
  }
  slots_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    slots_[i].param = params[i];
    slots_[i].name = names[i];
    slots_[i].passes_left = options_.backward_passes_per_step;
  }
  if (options_.gradient_predivide_factor != 1.0) {
    if (options_.op != ReduceOp::kAverage) {
      throw Error(Status::InvalidArgument("gradient_predivide_factor needs op=Average"));
    }
    // Average splits its 1/size between a pre-scale and the post-scale.
    prescale_ = 1.0 / options_.gradient_predivide_factor;
    postscale_ = options_.gradient_predivide_factor;
  }
  allreduce_ = std::make_unique<CountedAllreduce>(options_.op, prescale_, postscale_,
                                                  options_.process_set);
  if (!slots_.empty()) {
    outcome_ = std::make_unique<StepOutcome>("horde.optimizer.step_outcome." + slots_[0].name,
                                             options_.process_set);
  }
  MakeGroups();
  if (options_.bucket_cap_bytes > 0) {
    if (options_.compressor || !groups_.empty()) {
      throw Error(Status::InvalidArgument(
          "gradient_as_bucket_view reduces gradients in place in their buckets: it cannot be "
          "combined with compression or groups"));
    }
    if (!slots_.empty()) {
      buckets_ = std::make_unique<GradientBuckets>(params, names, options_.bucket_cap_bytes);
    }
  }
  hooks_ = std::make_unique<AccumulatedHooks>(params, names, "DistributedOptimizer",
                                              [this](size_t i) { OnGradientAccumulated(i); });
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::MakeGroups() {
  std::vector<std::vector<size_t>> groups = options_.groups;
  if (!groups.empty() && options_.num_groups > 0) {
    throw Error(Status::InvalidArgument("give either groups or num_groups, not both"));
  }
  if (groups.empty() && options_.num_groups > 0 && !slots_.empty()) {
    // Bounds rounded half to even, as Horovod's Python computes them.
    const size_t n = slots_.size();
    const size_t count = std::min<size_t>(options_.num_groups, n);
    auto bound = [&](size_t k) { return static_cast<size_t>(std::nearbyint(1.0 * k * n / count)); };
    for (size_t k = 0; k < count; ++k) {
      groups.emplace_back();
      for (size_t i = bound(k); i < bound(k + 1); ++i) groups.back().push_back(i);
    }
  }
  for (const std::vector<size_t>& members : groups) {
    if (members.empty()) throw InvalidArgument("a group of parameters is empty");
    for (size_t i : members) {
      if (i >= slots_.size() || slots_[i].group >= 0) {
        throw InvalidArgument("a parameter is in more than one group, or is not trainable");
      }
      slots_[i].group = static_cast<int>(groups_.size());
    }
    groups_.push_back(Group{members, {}});
  }
}

void GradientReducer::OnGradientAccumulated(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = slots_[i];
  backward_seen_ = true;
  if (slot.passes_left <= 0) {
    const std::string message =
        "Gradients were computed more than backward_passes_per_step times before call to "
        "step(). Increase backward_passes_per_step to accumulate gradients locally.";
    if (options_.raise_extra_backward_pass) options_.raise_extra_backward_pass(message);
    throw InvalidArgument(message + " (parameter '" + slot.name + "')");
  }
  // Started already: a placeholder stood in for it (its group failed to start).
  if (--slot.passes_left > 0 || slot.started) return;
  StartOrPlaceholder(i);
}

void GradientReducer::StartOrPlaceholder(size_t i) {
  try {
    Start(i);
  } catch (...) {
    // Raised by Synchronize() once the reductions that did start are done, not from
    // inside backward, so the step can be cleaned up like any failed step.
    if (!submit_error_) submit_error_ = std::current_exception();
    try {
      EnqueuePlaceholder(i);
    } catch (...) {
      // Nothing could be submitted: the others wait for this name until the stall limit.
    }
  }
}

void GradientReducer::FailNextStart(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.at(i).fail_next_start = true;
}

void GradientReducer::Start(size_t i) {
  Slot& slot = slots_[i];
  slot.started = true;
  if (std::exchange(slot.fail_next_start, false)) {
    throw Error(Status::Internal("a failure injected into the reduction of '" + slot.name + "'"));
  }
  const GradientReducerOptions& o = options_;
  if (buckets_) {
    if (GradientBuckets::Bucket* bucket = buckets_->MarkReady(i)) {
      const size_t tag = slots_.size() + (bucket - buckets_->buckets().data());
      allreduce_->Enqueue({bucket->buffer}, {bucket->name}, "", {tag});
    }
    return;
  }
  c10::NoGradGuard no_grad;
  if (!slot.param.grad().defined()) {
    // Unused in this step on this rank: reduce zeros so that no rank waits for it.
    slot.param.mutable_grad() = ZeroGradient(i, slot.group < 0 && !o.sparse_as_dense);
  }
  const at::Tensor& grad = slot.param.grad();
  // A group is reduced as one dense unit, so its sparse members are densified too.
  if (grad.is_sparse() && (o.sparse_as_dense || slot.group >= 0)) {
    slot.densified = static_cast<int>(grad.sparse_dim());
    slot.param.mutable_grad() = grad.to_dense();
  }
  if (slot.param.grad().is_sparse()) return StartSparse(i);
  if (slot.group >= 0) {
    Group& group = groups_[slot.group];
    group.ready.push_back(i);
    if (group.ready.size() == group.members.size()) StartGroup(slot.group);
    return;
  }
  PrepareSent(i);
  if (batching_) {
    batch_.push_back(i);
  } else {
    one_slot_.assign(1, i);
    EnqueueSlots(one_slot_);
  }
}

void GradientReducer::PrepareSent(size_t i) {
  Slot& slot = slots_[i];
  const at::Tensor& grad = slot.param.grad();
  slot.sent = options_.compressor ? options_.compressor->Compress(i, grad) : grad;
  // The allreduce works in place on contiguous memory; WriteBack copies a copy back.
  if (!slot.sent.is_contiguous()) slot.sent = slot.sent.contiguous();
}

void GradientReducer::StartSparse(size_t i) {
  Slot& slot = slots_[i];
  const GradientReducerOptions& o = options_;
  if (o.op != ReduceOp::kSum && o.op != ReduceOp::kAverage) {
    throw Error(Status::InvalidArgument("sparse tensors can only be reduced with Sum or Average"));
  }
  const at::Tensor sparse = slot.param.grad().coalesce();
  slot.sent = sparse;
  // Allgather concatenates along the first dimension: indices go as [nnz, ndim].
  slot.indices_handle = AllgatherAsync(sparse.indices().t().contiguous(), slot.name + ".indices",
                                       o.process_set);
  slot.values_handle = AllgatherAsync(sparse.values(), slot.name + ".values", o.process_set);
}

void GradientReducer::EnqueueSlots(const std::vector<size_t>& slots) {
  if (slots.empty()) return;
  // Reused from call to call (strings keep their capacity): no allocation per gradient.
  scratch_tensors_.resize(slots.size());
  scratch_names_.resize(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    const Slot& slot = slots_[slots[k]];
    scratch_tensors_[k] = slot.sent;
    scratch_names_[k] = slot.name;
  }
  allreduce_->Enqueue(scratch_tensors_, scratch_names_, "", slots);
  for (at::Tensor& tensor : scratch_tensors_) tensor.reset();
  for (size_t i : slots) slots_[i].counted = true;
}

void GradientReducer::StartGroup(size_t g) {
  Group& group = groups_[g];
  std::vector<at::Tensor> sent;
  for (size_t i : group.members) {
    PrepareSent(i);
    sent.push_back(slots_[i].sent);
  }
  group.ready.clear();
  // Named after its first parameter, so two optimizers' groups never collide.
  allreduce_->Enqueue(sent, {}, slots_[group.members.front()].name + ".group", group.members);
  for (size_t i : group.members) slots_[i].counted = true;
}

void GradientReducer::Synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  std::exception_ptr error = submit_error_;
  try {
    if (buckets_) {
      SynchronizeBuckets(&error);
    } else {
      SynchronizeGradients(&error);
    }
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (!error) error = submit_error_;  // a start that failed during this call
  AgreeOnOutcome(&error);
  NewStep();
  if (error) std::rethrow_exception(error);
}

void GradientReducer::SynchronizeGradients(std::exception_ptr* error) {
  try {
    bool known = true;
    for (const Slot& slot : slots_) known = known && slot.layout >= 0;
    if (!known) AgreeOnLayouts();
    batching_ = true;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i].started) StartOrPlaceholder(i);
    }
    batching_ = false;
    EnqueueBatch();
  } catch (...) {
    // Raised once every started reduction is done.
    if (!*error) *error = std::current_exception();
  }
  batching_ = false;
  batch_.clear();
  std::vector<size_t> failed;
  NoteReductions(allreduce_->Wait(&failed), error);
  for (size_t i : failed) {
    if (i < slots_.size()) slots_[i].counted = false;
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.placeholder || (!slot.counted && slot.indices_handle < 0)) {
      // Not written back: a sparse gradient reduced dense still gets its layout back,
      // which the next backward pass and the optimizer's state expect.
      if (slot.densified) {
        c10::NoGradGuard no_grad;
        slot.param.mutable_grad() = slot.param.grad().to_sparse(slot.densified);
      }
      continue;
    }
    try {
      if (slot.indices_handle >= 0) {
        WriteBackSparse(slot);
      } else {
        WriteBack(slot, i);
      }
    } catch (...) {
      if (!*error) *error = std::current_exception();
    }
  }
}

void GradientReducer::SynchronizeBuckets(std::exception_ptr* error) {
  // Buckets are reduced in place: their views already are the gradients.
  for (size_t i : buckets_->Waiting()) StartOrPlaceholder(i);
  NoteReductions(allreduce_->Wait(nullptr), error);
}

void GradientReducer::NoteReductions(const Status& status, std::exception_ptr* error) {
  if (status.agreed()) {
    failed_alike_ = true;
    *error = std::make_exception_ptr(Error(status));
  } else if (!status.ok() && !*error) {
    *error = std::make_exception_ptr(Error(status));
  }
}

void GradientReducer::AgreeOnOutcome(std::exception_ptr* error) {
  if (!outcome_ || failed_alike_) return;
  int failed_rank = -1;
  try {
    failed_rank = outcome_->LowestFailedRank(*error != nullptr);
  } catch (...) {
    if (!*error) *error = std::current_exception();
    return;
  }
  if (failed_rank < 0 || *error) return;
  *error = std::make_exception_ptr(Error(Status::PreconditionError(
      "DistributedOptimizer: the step failed on rank " + std::to_string(failed_rank) +
      " (its own error is raised there), so every rank skips it; the next step starts afresh "
      "on every rank")));
}

void GradientReducer::NewStep() {
  submit_error_ = nullptr;
  failed_alike_ = false;
  backward_seen_ = false;
  for (Slot& slot : slots_) {
    // A handle left here (its write-back never ran: an abandoned step) is waited for,
    // so the next step can reuse its name.
    if (slot.indices_handle >= 0) WaitAndDiscard(std::exchange(slot.indices_handle, -1));
    if (slot.values_handle >= 0) WaitAndDiscard(std::exchange(slot.values_handle, -1));
    slot.counted = false;
    slot.placeholder = false;
    slot.passes_left = options_.backward_passes_per_step;
    slot.started = false;
    slot.densified = 0;
    slot.sent = at::Tensor();
  }
  for (Group& group : groups_) group.ready.clear();
  if (buckets_) buckets_->NewStep();
}

void GradientReducer::AbandonStep() {
  std::lock_guard<std::mutex> lock(mu_);
  allreduce_->Wait(nullptr);
  NewStep();
}

bool GradientReducer::HasPendingWork() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Slot& slot : slots_) {
    if (slot.started) return true;
  }
  return submit_error_ != nullptr;
}

bool GradientReducer::BackwardSeen() {
  std::lock_guard<std::mutex> lock(mu_);
  return backward_seen_;
}

bool GradientReducer::ZeroBuckets() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!buckets_) return false;
  buckets_->Zero();
  return true;
}

int64_t GradientReducer::SetSize() const {
  std::shared_ptr<Runtime> runtime;
  std::vector<int> ranks;
  ThrowIfError(FindProcessSet(options_.process_set, &runtime, &ranks));
  return static_cast<int64_t>(ranks.size());
}

}  // namespace torch_ops
}  // namespace horde
