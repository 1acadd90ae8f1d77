#include "torch_plugin/parameter_shards.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/api.h"
#include "horde/error.h"
#include "torch_plugin/huge_page_tensor.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {
namespace {

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("ShardedOptimizer: " + message));
}

// What keeps parameters apart in the layout: element type and device.
int KindOf(const at::Tensor& t) {
  const int device = t.is_cuda() ? t.device().index() + 1 : 0;
  return static_cast<int>(t.scalar_type()) * 4096 + device;
}

// Elements [offset, offset + numel) of `tensor`, in its logical (row-major) order.
at::Tensor Piece(const at::Tensor& tensor, int64_t offset, int64_t numel) {
  return tensor.reshape({-1}).narrow(0, offset, numel);
}

}  // namespace

ParameterShards::ParameterShards(std::vector<at::Tensor> params, std::vector<int> groups,
                                 const std::vector<std::string>& names,
                                 ParameterShardsOptions options)
    : params_(std::move(params)), names_(names), options_(std::move(options)) {
  if (params_.size() != groups.size() || params_.size() != names.size()) {
    throw InvalidArgument("one group index and one name per parameter");
  }
  if (options_.backward_passes_per_step < 1) {
    throw InvalidArgument("backward_passes_per_step must be at least 1, got " +
                          std::to_string(options_.backward_passes_per_step));
  }
  if (options_.stage != 1 && options_.stage != 2) {
    throw InvalidArgument(
        "stage must be 1 (shard the optimizer state) or 2 (and the "
        "gradients), got " +
        std::to_string(options_.stage));
  }
  if (options_.op != ReduceOp::kAverage && options_.op != ReduceOp::kSum) {
    throw InvalidArgument("gradients are reduce-scattered, which takes op=Average or op=Sum");
  }
  if (options_.bucket_cap_bytes <= 0) throw InvalidArgument("the bucket cap must be positive");
  std::shared_ptr<Runtime> runtime;
  std::vector<int> set_ranks;
  ThrowIfError(FindProcessSet(options_.process_set, &runtime, &set_ranks));
  const int me = CurrentTopology().rank;
  const auto found = std::find(set_ranks.begin(), set_ranks.end(), me);
  if (found == set_ranks.end()) throw InvalidArgument("this rank is not in the process set");
  ranks_ = static_cast<int>(set_ranks.size());
  rank_ = static_cast<int>(found - set_ranks.begin());
  std::vector<ShardedTensor> tensors;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (p.is_sparse()) throw InvalidArgument("parameter " + std::to_string(i) + " is sparse");
    tensors.push_back({p.numel(), groups[i], KindOf(p), static_cast<int64_t>(p.element_size())});
  }
  buckets_ = LayOutShards(tensors, ranks_, options_.bucket_cap_bytes);
  storage_ = std::make_unique<ParameterStorage>(params_, buckets_, names_);
  at::NoGradGuard no_grad;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int64_t size = buckets_[b].shard_numel;
    const at::Tensor& flat = storage_->bucket(b);
    shards_.push_back(flat.narrow(0, rank_ * size, size).clone().requires_grad_(true));
    shard_grads_.push_back(NewFlatTensor(size, flat.options()));
    if (options_.stage == 1) kept_buckets_.push_back(NewFlatTensor(flat.numel(), flat.options()));
  }
  buckets_of_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (const ShardBucket::Member& m : buckets_[b].members) buckets_of_[m.tensor].push_back(b);
  }
  step_.resize(buckets_.size());
  passes_left_.assign(params_.size(), options_.backward_passes_per_step);
  collected_.assign(params_.size(), false);
  hooks_ = std::make_unique<AccumulatedHooks>(params_, names, "ShardedOptimizer",
                                              [this](size_t i) { OnGradientAccumulated(i); });
}

ParameterShards::~ParameterShards() {
  hooks_.reset();
  // Reductions a step started and nobody waited for (the optimizer dropped mid-step).
  for (BucketStep& step : step_) {
    if (step.handle >= 0) Release(step.handle);
  }
}

void ParameterShards::OnGradientAccumulated(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (collected_[i]) {
    if (step_error_.empty()) {
      step_error_ = "a gradient arrived more than backward_passes_per_step (" +
                    std::to_string(options_.backward_passes_per_step) +
                    ") times before step(); raise backward_passes_per_step to accumulate "
                    "gradients locally";
    }
    return;
  }
  if (--passes_left_[i] == 0) Collect(i);
}

void ParameterShards::Collect(size_t i) {
  at::NoGradGuard no_grad;
  collected_[i] = true;
  if (gather_ && !buckets_of_[i].empty()) {
    const size_t last = buckets_of_[i].back();
    if (!gather_->finished(last) && step_error_.empty()) {
      step_error_ = "parameter '" + names_[i] +
                    "' got a gradient before its update was written: the forward read it "
                    "outside its own module's forward (a weight shared with another module?); "
                    "call wait_for_parameters() before the forward, or construct "
                    "ShardedOptimizer with overlap_allgather=False";
    }
    try {
      FinishGatherThrough(last);  // the step goes on from written parameters
    } catch (...) {
      if (!submit_error_) submit_error_ = std::current_exception();
    }
  }
  const at::Tensor grad = params_[i].grad();
  const bool sparse = grad.defined() && grad.is_sparse();
  const int64_t numel = storage_->numel(i);
  if (sparse && step_error_.empty()) {
    step_error_ = "parameter " + std::to_string(i) +
                  " has a sparse gradient, which sharding cannot split (use "
                  "nn.Embedding(sparse=False), or DistributedOptimizer)";
  }
  const bool usable = grad.defined() && !sparse && grad.numel() == numel;
  if (grad.defined() && !sparse && !usable && step_error_.empty()) {
    step_error_ = "parameter '" + names_[i] + "' has a gradient of " +
                  std::to_string(grad.numel()) + " elements, not the " + std::to_string(numel) +
                  " it had when the optimizer was made; make a new optimizer for a changed "
                  "model";
  }
  for (size_t b : buckets_of_[i]) {
    BucketStep& step = step_[b];
    if (!step.flat.defined()) step.flat = GradientBucket(b, params_[i].options());
    for (const ShardBucket::Member& m : buckets_[b].members) {
      if (m.tensor != i) continue;
      at::Tensor piece = step.flat.narrow(0, m.offset, m.numel);
      if (usable) {
        piece.copy_(Piece(grad, m.tensor_offset, m.numel));
      } else {
        piece.zero_();  // no gradient counts as zeros
      }
      ++step.collected;
    }
    if (step.collected == buckets_[b].members.size()) StartBucket(b);
  }
  if (options_.stage == 2) params_[i].mutable_grad().reset();
}

std::vector<at::Tensor> ParameterShards::HeldBuffers() const {
  return options_.stage == 1 ? kept_buckets_ : spare_buffers_;
}

at::Tensor ParameterShards::GradientBucket(size_t b, const at::TensorOptions& options) {
  const ShardBucket& bucket = buckets_[b];
  at::Tensor buffer = options_.stage == 1 ? kept_buckets_[b] : SpareBuffer(bucket.numel, options);
  if (!buffer.defined()) buffer = NewFlatTensor(bucket.numel, options.requires_grad(false));
  if (options_.stage == 2) {
    size_t in_flight = 1;  // this one
    for (const BucketStep& step : step_) in_flight += step.flat.defined() ? 1 : 0;
    most_in_flight_ = std::max(most_in_flight_, in_flight);
    step_[b].buffer = buffer;
  }
  at::Tensor flat = buffer.narrow(0, 0, bucket.numel);
  // The members cover it, packed from the start: only the padding needs zeros.
  const ShardBucket::Member& last = bucket.members.back();
  const int64_t used = last.offset + last.numel;
  flat.narrow(0, used, bucket.numel - used).zero_();
  return flat;
}

at::Tensor ParameterShards::SpareBuffer(int64_t numel, const at::TensorOptions& options) {
  for (size_t s = 0; s < step_.size(); ++s) {
    if (step_[s].handle >= 0 && Poll(step_[s].handle)) FinishReduction(s);
  }
  auto best = spare_buffers_.end();  // the smallest that fits
  for (auto spare = spare_buffers_.begin(); spare != spare_buffers_.end(); ++spare) {
    if (spare->numel() >= numel && spare->dtype() == options.dtype() &&
        spare->device() == options.device() &&
        (best == spare_buffers_.end() || spare->numel() < best->numel())) {
      best = spare;
    }
  }
  if (best == spare_buffers_.end()) return at::Tensor();
  at::Tensor buffer = *best;
  spare_buffers_.erase(best);
  return buffer;
}

void ParameterShards::StartBucket(size_t b) {
  BucketStep& step = step_[b];
  if (options_.fp16 && step.flat.is_floating_point()) {
    if (options_.stage == 2) spare_buffers_.push_back(step.buffer);  // spent: copied
    step.buffer = at::Tensor();
    step.flat = step.flat.to(at::kHalf);
  }
  try {
    // Into the shard's own gradient buffer, unless it travels as float16.
    const at::Tensor landing = step.flat.scalar_type() == shard_grads_[b].scalar_type()
                                   ? shard_grads_[b]
                                   : at::Tensor();
    step.handle = ReducescatterAsync(step.flat, options_.name + ".grads." + std::to_string(b),
                                     options_.op, 1.0, 1.0, options_.process_set, landing);
  } catch (...) {
    // Raised by ReduceGradients() once the reductions that did start are done, not from
    // inside backward (where autograd would make any error a RuntimeError).
    if (!submit_error_) submit_error_ = std::current_exception();
  }
}

at::Tensor ParameterShards::Flatten(size_t b,
                                    const std::function<at::Tensor(size_t)>& tensor_of) const {
  const ShardBucket& bucket = buckets_[b];
  const at::Tensor& first = params_[bucket.members[0].tensor];
  at::Tensor flat = at::zeros({bucket.numel}, first.options().requires_grad(false));
  for (const ShardBucket::Member& m : bucket.members) {
    const at::Tensor source = tensor_of(m.tensor);
    if (source.defined()) {
      flat.narrow(0, m.offset, m.numel).copy_(Piece(source, m.tensor_offset, m.numel));
    }
  }
  return flat;
}

std::string ParameterShards::RefreshShards() {
  std::string error = storage_->Sync(params_);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int64_t size = buckets_[b].shard_numel;
    shards_[b].detach().copy_(storage_->bucket(b).narrow(0, rank_ * size, size));
  }
  return error;
}

bool ParameterShards::HasPendingWork() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (collected_[i] || passes_left_[i] < options_.backward_passes_per_step) return true;
  }
  return false;
}

void ParameterShards::ReduceGradients() {
  FinishGather();
  at::NoGradGuard no_grad;
  const std::string refresh_error = RefreshShards();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!collected_[i]) Collect(i);
  }
  // Every bucket has started: wait for all (even after one failed) before anything throws,
  // so that nothing of this step is left in flight.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (step_[b].handle >= 0) FinishReduction(b);  // (none when its start failed)
  }
  step_.assign(buckets_.size(), BucketStep());
  KeepBuffersInFlight();
  passes_left_.assign(params_.size(), options_.backward_passes_per_step);
  collected_.assign(params_.size(), false);
  std::string error = refresh_error;
  if (error.empty()) std::swap(error, step_error_);
  step_error_.clear();
  std::exception_ptr failure = submit_error_ ? submit_error_ : reduce_error_;  // the first
  submit_error_ = reduce_error_ = nullptr;
  if (failure) std::rethrow_exception(failure);
  if (!error.empty()) throw InvalidArgument(error);
}

void ParameterShards::KeepBuffersInFlight() {
  std::sort(spare_buffers_.begin(), spare_buffers_.end(),
            [](const at::Tensor& a, const at::Tensor& b) { return a.numel() > b.numel(); });
  spare_buffers_.resize(std::min(spare_buffers_.size(), most_in_flight_));
  most_in_flight_ = 0;
}

void ParameterShards::FinishReduction(size_t b) {
  BucketStep& step = step_[b];
  try {
    const at::Tensor reduced = Synchronize(step.handle);
    shards_[b].mutable_grad() = reduced.to(shards_[b].scalar_type());
  } catch (...) {
    if (!reduce_error_) reduce_error_ = std::current_exception();
  }
  step.handle = -1;
  if (step.buffer.defined()) spare_buffers_.push_back(step.buffer);  // reduced: spent
  step.flat = step.buffer = at::Tensor();
}

double ParameterShards::ClipGradNorm(double max_norm, double norm_type) {
  at::NoGradGuard no_grad;
  const bool infinite = std::isinf(norm_type);
  double local = 0;
  for (const at::Tensor& shard : shards_) {
    if (!shard.grad().defined()) continue;
    const at::Tensor g = shard.grad().to(at::kDouble).abs();
    local = infinite ? std::max(local, g.max().item<double>())
                     : local + g.pow(norm_type).sum().item<double>();
  }
  at::Tensor total = at::full({1}, local, at::kDouble);
  Synchronize(AllreduceInPlaceAsync(total, options_.name + ".norm",
                                    infinite ? ReduceOp::kMax : ReduceOp::kSum, 1.0, 1.0,
                                    options_.process_set));
  const double norm = infinite ? total.item<double>()
                               : std::pow(total.item<double>(), 1.0 / norm_type);
  const double coefficient = std::min(max_norm / (norm + 1e-6), 1.0);
  for (at::Tensor& shard : shards_) {
    if (shard.grad().defined()) shard.mutable_grad().mul_(coefficient);
  }
  return norm;
}

void ParameterShards::GatherParameters() {
  StartGather();
  FinishGather();
}

void ParameterShards::StartGather() {
  FinishGather();
  at::NoGradGuard no_grad;
  std::vector<HandleId> handles;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    handles.push_back(AllgatherAsync(shards_[b].detach(),
                                     options_.name + ".params." + std::to_string(b),
                                     options_.process_set, storage_->bucket(b)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  gather_ = std::make_unique<ParameterGather>(*storage_, params_, std::move(handles));
}

void ParameterShards::FinishGather(const std::vector<size_t>& params) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i : params) {
    if (!gather_) return;
    if (i >= params_.size()) throw InvalidArgument("no parameter " + std::to_string(i));
    if (!buckets_of_[i].empty()) FinishGatherThrough(buckets_of_[i].back());
  }
}

void ParameterShards::FinishGather() {
  std::lock_guard<std::mutex> lock(mu_);
  if (gather_) FinishGatherThrough(buckets_.size() - 1);
}

bool ParameterShards::Gathering() {
  std::lock_guard<std::mutex> lock(mu_);
  return gather_ != nullptr;
}

void ParameterShards::FinishGatherThrough(size_t last) {
  std::exception_ptr failure;
  try {
    gather_->FinishThrough(last);
  } catch (...) {
    failure = std::current_exception();  // every bucket has been waited for
  }
  if (!failure && !gather_->done()) return;
  gather_.reset();
  if (failure) std::rethrow_exception(failure);
}

std::map<size_t, at::Tensor> ParameterShards::Unshard(const std::vector<size_t>& buckets,
                                                      const std::vector<at::Tensor>& slices) const {
  if (buckets.size() != slices.size()) throw InvalidArgument("one slice per bucket");
  std::map<size_t, at::Tensor> whole;
  if (buckets.empty()) return whole;
  std::vector<at::Tensor> contiguous;
  for (const at::Tensor& s : slices) contiguous.push_back(s.detach().contiguous());
  OperationResult result = WaitOperation(
      GroupedAllgatherAsync(contiguous, options_.name + ".state", options_.process_set));
  std::map<size_t, int64_t> covered;
  for (size_t k = 0; k < buckets.size(); ++k) {
    for (const ShardBucket::Member& m : buckets_[buckets[k]].members) {
      at::Tensor& flat = whole[m.tensor];
      if (!flat.defined())
        flat = at::empty({params_[m.tensor].numel()}, result.outputs[k].options());
      flat.narrow(0, m.tensor_offset, m.numel)
          .copy_(result.outputs[k].narrow(0, m.offset, m.numel));
      covered[m.tensor] += m.numel;
    }
  }
  for (auto it = whole.begin(); it != whole.end();) {
    const at::Tensor& p = params_[it->first];
    if (covered[it->first] != p.numel()) {
      it = whole.erase(it);
    } else {
      it->second = it->second.view(p.sizes());
      ++it;
    }
  }
  return whole;
}

at::Tensor ParameterShards::Shard(size_t bucket, const std::map<size_t, at::Tensor>& whole) const {
  if (bucket >= buckets_.size()) throw InvalidArgument("no bucket " + std::to_string(bucket));
  for (const ShardBucket::Member& m : buckets_[bucket].members) {
    const auto found = whole.find(m.tensor);
    if (found == whole.end() || found->second.numel() != params_[m.tensor].numel()) {
      throw InvalidArgument("the state of parameter " + std::to_string(m.tensor) +
                            " is missing or not shaped like it");
    }
  }
  const int64_t size = buckets_[bucket].shard_numel;
  at::Tensor flat = Flatten(bucket, [&](size_t i) { return whole.at(i).detach(); });
  const at::Tensor& sample = whole.at(buckets_[bucket].members[0].tensor);
  return flat.narrow(0, rank_ * size, size).to(sample.scalar_type()).clone();
}

}  // namespace torch_ops
}  // namespace horde
