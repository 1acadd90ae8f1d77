#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "horde/data_type.h"
#include "torch_plugin/accumulated_hooks.h"
#include "torch_plugin/counted_allreduce.h"
#include "torch_plugin/gradient_buckets.h"
#include "torch_plugin/gradient_compressor.h"
#include "torch_plugin/operation_table.h"
#include "torch_plugin/step_outcome.h"

namespace horde {
namespace torch_ops {

struct GradientReducerOptions {
  ReduceOp op = ReduceOp::kAverage;
  // With Average: divide by this before the sum and by size()/factor after it.
  double gradient_predivide_factor = 1.0;
  // Local backward passes (gradients accumulate in .grad) per reduction.
  int backward_passes_per_step = 1;
  int32_t process_set = 0;
  // Parameters (indices) reduced as one unit each, negotiated and fused together...
  std::vector<std::vector<size_t>> groups;
  // ...or, without `groups`, this many contiguous, nearly equal slices of them.
  int num_groups = 0;
  // Sparse gradients are reduced as dense tensors instead of by allgather.
  bool sparse_as_dense = false;
  // Above 0: gradients are views into flat buckets of up to this many bytes, each
  // reduced in place by one allreduce (see GradientBuckets). Not with groups or
  // compression.
  int64_t bucket_cap_bytes = 0;
  std::shared_ptr<GradientCompressor> compressor;  // null: gradients travel as they are
  // Raised from backward when a gradient arrives more than backward_passes_per_step
  // times in a step (Python raises Horovod's AssertionError). Default: horde::Error.
  std::function<void(const std::string& message)> raise_extra_backward_pass;
};

// The gradient path of DistributedOptimizer, one implementation for Python and C++: a
// C++ post-hook on each parameter's gradient accumulator fires once backward has
// accumulated its gradient and, on the step's last backward pass, starts its reduction
// (alone, as the last ready member of its group, or of its bucket), so communication
// overlaps the rest of backward without entering Python. Synchronize() waits for all of
// them and writes the results into the gradients.
//
// A parameter whose gradient did not appear on this rank (unused in this step) is
// reduced at Synchronize() as zeros, in the layout (dense or sparse) other ranks use,
// so that no rank waits for it. Sparse gradients are allgathered (indices and values)
// and written back sparse.
//
// A step fails on every rank alike: a rank that cannot prepare a gradient (its
// compressor raised, its memory ran out) still takes part in that gradient's reduction
// with a placeholder of the same layout, so no rank waits for it, and at the end of
// Synchronize() the ranks agree whether any rank's step failed (StepOutcome). If one
// did, Synchronize() raises on every rank (that rank's own error there), the optimizer
// skips the update everywhere, and the next step pairs the same names on every rank.
// A reduction that failed alike on every rank (Status::agreed(): a stall, ranks that
// disagree) needs no such agreement: every rank's step fails with it, so the ranks skip
// StepOutcome, and a rank that waited for a late one does not wait for it again.
//
// Neither copyable nor movable: the hooks refer to it. Destroying it removes them.
class GradientReducer {
 public:
  // params: the trainable parameters; names[i]: params[i]'s reduction's name, the same
  // on every rank. Throws horde::Error (kInvalidArgument) for inconsistent options.
  GradientReducer(std::vector<at::Tensor> params, std::vector<std::string> names,
                  GradientReducerOptions options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Starts what no hook started, waits for every reduction (even after one failed) and
  // writes the results into .grad; then throws the first error, if any. Either way the
  // next backward pass starts a fresh step.
  void Synchronize();
  // Whether reductions of this step have started (Horovod refuses zero_grad() then).
  bool HasPendingWork();
  // Ends the step in progress without writing anything back: waits for the reductions
  // it started (after a failure that ended the step elsewhere they have failed, or fail
  // at once once the runtime is gone) and starts afresh. For a state loaded in the middle
  // of a step, as an elastic job going back to its last commit does.
  void AbandonStep();
  // Whether a gradient has arrived since the last Synchronize().
  bool BackwardSeen();
  // With buckets: zeros them, the gradients staying their views, and returns true.
  bool ZeroBuckets();
  // Null without bucket views.
  const GradientBuckets* buckets() const { return buckets_.get(); }
  // Fault injection for tests: the next start of parameter i's reduction on this rank
  // raises, as a compressor or an allocation failing on this rank alone would.
  void FailNextStart(size_t i);

 private:
  struct Slot {
    at::Tensor param;
    std::string name;
    int group = -1;       // index into groups_, or -1
    int passes_left = 0;  // backward passes still to come in this step
    bool started = false;
    int layout = -1;    // as every rank agreed: 0 dense, k > 0 sparse_dim k, -1 unknown
    int densified = 0;  // sparse_dim of a sparse gradient reduced dense in this step
    // What is reduced in place: .grad, or its compressed or contiguous form.
    at::Tensor sent;
    bool counted = false;  // its allreduce reports to done_
    // What was reduced stands in for a gradient this rank failed to prepare.
    bool placeholder = false;
    bool fail_next_start = false;  // FailNextStart()
    // A sparse gradient's allgathers of its indices and values.
    HandleId indices_handle = -1;
    HandleId values_handle = -1;
  };
  struct Group {
    std::vector<size_t> members;
    std::vector<size_t> ready;
  };

  void OnGradientAccumulated(size_t i);
  void Start(size_t i);
  // Start(i), or after it failed: records the error and submits a placeholder.
  void StartOrPlaceholder(size_t i);
  // What a rank reduces in place of gradient i when it failed to prepare it (its
  // group's or bucket's reduction, for a member); gradient_placeholders.cc.
  void EnqueuePlaceholder(size_t i);
  at::Tensor DensePlaceholder(size_t i) const;
  void EnqueueBatch();
  void StartSparse(size_t i);
  // Sets slot i's `sent`: its gradient, compressed if asked, contiguous.
  void PrepareSent(size_t i);
  void StartGroup(size_t g);
  // Queues the allreduces of these slots' `sent` tensors in one call.
  void EnqueueSlots(const std::vector<size_t>& slots);
  at::Tensor ZeroGradient(size_t i, bool sparse) const;
  void AgreeOnLayouts();
  void SynchronizeGradients(std::exception_ptr* error);
  void SynchronizeBuckets(std::exception_ptr* error);
  // Records how the step's reductions ended: a failure shared by every rank replaces a
  // local error in *error, since every rank raises it.
  void NoteReductions(const Status& status, std::exception_ptr* error);
  // Sets *error on every rank when any rank's step failed.
  void AgreeOnOutcome(std::exception_ptr* error);
  void WriteBack(Slot& slot, size_t i);
  void WriteBackSparse(Slot& slot);
  void NewStep();
  int64_t SetSize() const;
  void MakeGroups();

  std::vector<Slot> slots_;
  std::vector<Group> groups_;
  const GradientReducerOptions options_;
  double prescale_ = 1.0;
  double postscale_ = 1.0;
  std::unique_ptr<GradientBuckets> buckets_;
  // Every allreduce of a step (tags: slot indices; buckets after them).
  std::unique_ptr<CountedAllreduce> allreduce_;
  std::unique_ptr<StepOutcome> outcome_;  // null without parameters
  // While Synchronize() starts what no hook did: slots to submit in one call.
  bool batching_ = false;
  std::vector<size_t> batch_;
  std::vector<size_t> one_slot_;  // a hook's single slot
  std::vector<at::Tensor> scratch_tensors_;
  std::vector<std::string> scratch_names_;
  std::mutex mu_;                    // hooks may run on autograd's device threads
  std::exception_ptr submit_error_;  // the first failed submission of this step
  bool backward_seen_ = false;
  bool failed_alike_ = false;  // a reduction of this step failed alike on every rank
  // Last, so that destruction removes the hooks before anything they use.
  std::unique_ptr<AccumulatedHooks> hooks_;
};

}  // namespace torch_ops
}  // namespace horde
