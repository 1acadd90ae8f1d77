#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/shard_layout.h"
#include "horde/data_type.h"
#include "torch_plugin/accumulated_hooks.h"
#include "torch_plugin/parameter_gather.h"
#include "torch_plugin/parameter_storage.h"

namespace horde {
namespace torch_ops {

struct ParameterShardsOptions {
  // 1: the parameters keep their whole gradients; 2: those are dropped once reduced, so a
  // rank holds only its shard of them between steps.
  int stage = 2;
  ReduceOp op = ReduceOp::kAverage;  // Average or Sum
  // Local backward passes (gradients accumulate in .grad) per step.
  int backward_passes_per_step = 1;
  int32_t process_set = 0;
  int64_t bucket_cap_bytes = 25 << 20;
  bool fp16 = false;  // gradients travel as float16
  // The collectives' names start with this (the same on every rank, one per optimizer).
  std::string name = "sharded";
};

// The sharded optimizer's core (ZeRO stages 1 and 2), one implementation for Python and
// C++: the trainable parameters live in flat buckets (core/shard_layout.h, and
// ParameterStorage: each parameter's data is a view of its place in them), and this rank
// owns one equal slice of each, its shard, held as a flat tensor per bucket that the
// wrapped optimizer steps (so its state is the shard's size). A step reduce-scatters the
// gradients bucket by bucket into the shards' .grad, the optimizer updates the shards, and
// an allgather of the shards lands in the parameters' buckets. A hook on each parameter's
// gradient accumulator copies the gradient into its buckets on the step's last backward
// pass and starts a bucket's reduce-scatter once all its members are in, so the
// reductions overlap the rest of backward (stage 2 drops the whole gradient right there).
// The same bytes cross the network as one allreduce; a rank keeps 1/N of the optimizer
// state (and with stage 2 of the gradients).
//
// Collective: every rank of the process set calls each method in the same order.
class ParameterShards {
 public:
  // params: the trainable parameters, in the optimizer's order; groups[i]: the index of
  // params[i]'s optimizer parameter group. Throws horde::Error for bad arguments.
  // names[i]: params[i]'s name (for errors).
  ParameterShards(std::vector<at::Tensor> params, std::vector<int> groups,
                  const std::vector<std::string>& names, ParameterShardsOptions options);
  ~ParameterShards();
  ParameterShards(const ParameterShards&) = delete;
  ParameterShards& operator=(const ParameterShards&) = delete;

  // One flat tensor per bucket: this rank's slice of its parameters, for the optimizer.
  const std::vector<at::Tensor>& shards() const { return shards_; }
  // The parameter group of shards()[b].
  int group_of(size_t bucket) const { return buckets_[bucket].group; }
  const std::vector<ShardBucket>& buckets() const { return buckets_; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }

  // Completes the step's reductions (starting those no hook started: a missing gradient
  // counts as zeros) and sets each shard's .grad to this rank's slice of the result. Stage 2 then
  // drops the parameters' .grad. First the shards take the parameters' values, which the user may
  // have set since the last step (a broadcast, a checkpoint). Throws for a sparse gradient.
  void ReduceGradients();
  // Whether a backward pass has fed this step since ReduceGradients(): zeroing the
  // gradients then would not undo what the hooks have collected.
  bool HasPendingWork();
  // The norm of the whole reduced gradient (all shards; `norm_type` p or infinity), and
  // scales the shards' gradients by max_norm / (norm + 1e-6) when that is below 1, as
  // torch.nn.utils.clip_grad_norm_ does over the whole.
  double ClipGradNorm(double max_norm, double norm_type);
  // Writes every rank's updated shards into the parameters: StartGather(), then
  // FinishGather().
  void GatherParameters();
  // Starts the allgathers of the updated shards, bucket by bucket; a parameter keeps its
  // value from before the step until FinishGather writes its bucket.
  void StartGather();
  // Waits for the buckets holding `params` (indexes into the parameters), and those before
  // them, and writes them into the parameters; FinishGather() waits for all. Throws a failed
  // allgather's error (after waiting for every bucket).
  void FinishGather(const std::vector<size_t>& params);
  void FinishGather();
  bool Gathering();

  // For checkpoints. Unshard: tensors shaped like the shards of `buckets` (a tensor of
  // optimizer state each) gathered from every rank into one per parameter that lies
  // wholly in those buckets, shaped like it (collective). Shard: this rank's slice of
  // bucket `bucket` cut from whole per-parameter tensors (local).
  std::map<size_t, at::Tensor> Unshard(const std::vector<size_t>& buckets,
                                       const std::vector<at::Tensor>& slices) const;
  at::Tensor Shard(size_t bucket, const std::map<size_t, at::Tensor>& whole) const;
  // The whole-bucket buffers held now (stage 1 keeps one per bucket between steps,
  // stage 2 those of the buckets in flight): for reports of what a rank holds.
  std::vector<at::Tensor> HeldBuffers() const;

 private:
  // Copies this rank's slice of the parameters into the shards. Returns what is wrong
  // (a parameter whose shape changed), else "".
  std::string RefreshShards();
  // Waits for bucket b's reduce-scatter (started, not yet finished) and sets its shard's
  // gradient; a failure is kept for ReduceGradients. Stage 2 keeps the bucket's spent
  // buffer for a later bucket of the step. Under mu_, or once no hook can run.
  void FinishReduction(size_t b);
  // Stage 2, between steps: keeps the largest spare buffers, as many as the step held at
  // once, for the next step.
  void KeepBuffersInFlight();
  // The hook: on the step's last pass, Collect(i).
  void OnGradientAccumulated(size_t i);
  // Copies parameter i's gradient (if any) into its buckets and starts each bucket whose
  // members are all in. Under mu_.
  void Collect(size_t i);
  void StartBucket(size_t b);
  // The flat buffer bucket b's gradients are collected in: its kept one (stage 1), else
  // the spent one of a bucket whose reduction is done, else a new one. Under mu_.
  at::Tensor GradientBucket(size_t b, const at::TensorOptions& options);
  // Stage 2: the smallest spare buffer of at least `numel` elements, taken from the spares
  // (once the reductions that are done have given theirs back); undefined if none.
  at::Tensor SpareBuffer(int64_t numel, const at::TensorOptions& options);
  // FinishGather through bucket `last`. Under mu_.
  void FinishGatherThrough(size_t last);
  // The whole flat bucket `b` filled from per-parameter tensors of its members.
  at::Tensor Flatten(size_t b, const std::function<at::Tensor(size_t)>& tensor_of) const;

  std::vector<at::Tensor> params_;
  std::vector<std::string> names_;
  ParameterShardsOptions options_;
  int ranks_ = 1, rank_ = 0;
  std::vector<ShardBucket> buckets_;
  std::unique_ptr<ParameterStorage> storage_;
  std::vector<at::Tensor> shards_;
  // Per bucket, where its reduce-scatter lands (the shard's gradient between steps).
  std::vector<at::Tensor> shard_grads_;
  // Stage 1, per bucket: one whole-bucket buffer that takes the gradients every step: no
  // allocation per step (a fresh buffer's first touch costs more than the copies), for
  // the memory of one more gradient. Stage 2 keeps 1/N of the gradients: a bucket whose
  // reduction is done lends its buffer to a later one (spare_buffers_), and between
  // steps it keeps only as many buffers as its last step held at once (the buckets in
  // flight, as DeepSpeed keeps its reduce buckets), so a step allocates none.
  std::vector<at::Tensor> kept_buckets_;
  std::vector<at::Tensor> spare_buffers_;
  size_t most_in_flight_ = 0;  // stage 2: most gradient buffers this step held at once
  std::vector<std::vector<size_t>> buckets_of_;  // per parameter: the buckets it lies in
  // This step's progress.
  struct BucketStep {
    at::Tensor flat;       // the gradients being gathered, then reduced
    at::Tensor buffer;     // stage 2: the whole spare buffer `flat` lies in, until spent
    size_t collected = 0;  // members in
    int64_t handle = -1;   // its reduce-scatter, once started
  };
  std::vector<BucketStep> step_;
  std::vector<int> passes_left_;
  std::vector<bool> collected_;
  std::string step_error_;           // the first misuse seen by a hook, thrown by ReduceGradients
  std::exception_ptr submit_error_;  // the first reduce-scatter that could not start
  std::exception_ptr reduce_error_;  // the first reduce-scatter that failed
  std::unique_ptr<ParameterGather> gather_;  // the step's allgathers until all are written
  std::mutex mu_;                            // hooks may run on autograd's device threads
  // Last, so that destruction removes the hooks before anything they use.
  std::unique_ptr<AccumulatedHooks> hooks_;
};

}  // namespace torch_ops
}  // namespace horde
