#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/runtime_stats.h"
#include "core/straggler_report.h"
#include "core/topology.h"
#include "horde/error.h"
#include "torch_plugin/operation_table.h"

namespace horde {
namespace torch_ops {

// The operations frameworks call, on at::Tensors, shared by the Python extension and
// the C++ API. Failures throw horde::Error; local misuse has code kInvalidArgument.

// Starts horde, then one process set per entry of `process_sets` (world ranks); returns
// their ids, in order.
std::vector<int32_t> Init(const std::vector<std::vector<int>>& process_sets = {});
void Shutdown();
// Adds a process set after init (every rank calls it, in the same order; needs
// HORDE_DYNAMIC_PROCESS_SETS=1) and returns its id; RemoveProcessSet shuts it down.
int32_t AddProcessSet(const std::vector<int>& ranks);
void RemoveProcessSet(int32_t id);
// This rank failed (e.g. an uncaught exception): every rank's pending and later
// operations fail with "rank <r> failed: <failure>", and the job ends when this
// process exits (see mpi::MarkProcessFailed).
void Abort(const std::string& failure);
bool IsInitialized();
// Whether this rank can survive another rank's failure in place (see
// mpi_ops/rank_failures.h).
bool SurvivesRankFailures();
// After a rank failed: re-forms the job from the live ranks and starts horde again over
// them, every process set renumbered (see core/api.h's RebuildRuntimes). Returns the
// sets' ranks by id, the global set's excluded. Collective over the survivors.
std::map<int32_t, std::vector<int>> RecoverInPlace();
// This process's place in the job; throws if horde is not initialized.
Topology CurrentTopology();
RuntimeStats Stats();
// Which rank the others wait for (see core/straggler_report.h).
StragglerReport Straggler();
bool MpiThreadsSupported();
// Rank 0 records a timeline to `path` (see core/timeline.h); other ranks do nothing.
void StartTimeline(const std::string& path, bool mark_cycles);
void StopTimeline();

// Each returns a handle at once; the operation runs on the background thread of the
// process set `process_set` (0: the global set, every rank), among that set's ranks; a
// rank outside the set gets kInvalidArgument. An empty name lets the runtime number the
// operation (see Runtime::Enqueue). `output` must be contiguous, with the input's dtype
// and shape.
HandleId AllreduceAsync(const at::Tensor& input, const at::Tensor& output, const std::string& name,
                        ReduceOp op, double prescale, double postscale, int32_t process_set = 0);
// `landing` (allgather, reducescatter): where the output lands, when given (contiguous, of
// the input's dtype and device; of another shape than the result, the operation fails):
// a caller that reuses one buffer step after step allocates nothing.
HandleId AllgatherAsync(const at::Tensor& input, const std::string& name, int32_t process_set = 0,
                        const at::Tensor& landing = at::Tensor());
// `root_rank` is a world rank, a member of the set.
HandleId BroadcastAsync(const at::Tensor& input, const at::Tensor& output, int root_rank,
                        const std::string& name, int32_t process_set = 0);

// In-place forms: `tensor` (of any layout) is the input and receives the output; waiting
// on the handle returns `tensor` itself (when it is not contiguous, the operation works
// on a contiguous copy, copied back by the wait). An undefined tensor throws
// kInvalidArgument.
HandleId AllreduceInPlaceAsync(const at::Tensor& tensor, const std::string& name, ReduceOp op,
                               double prescale, double postscale, int32_t process_set = 0);
HandleId GroupedAllreduceInPlaceAsync(const std::vector<at::Tensor>& tensors,
                                      const std::string& name, ReduceOp op, double prescale,
                                      double postscale, int32_t process_set = 0);
HandleId BroadcastInPlaceAsync(const at::Tensor& tensor, int root_rank, const std::string& name,
                               int32_t process_set = 0);

// Reduces the tensors as one unit: they are negotiated together and released only
// when every one is ready on every rank. Member i is named "<name>.<i>" (see
// Runtime::EnqueueGroup for unnamed groups). One handle for the group, whose wait gives
// every member's output.
HandleId GroupedAllreduceAsync(const std::vector<at::Tensor>& inputs,
                               const std::vector<at::Tensor>& outputs, const std::string& name,
                               ReduceOp op, double prescale, double postscale,
                               int32_t process_set = 0);
// Every rank's input concatenated along the first dimension, the inputs gathered as one
// group (see GroupedAllreduceAsync).
HandleId GroupedAllgatherAsync(const std::vector<at::Tensor>& inputs, const std::string& name,
                               int32_t process_set = 0);

// Sends splits[j] rows of `input` (in order along the first dimension) to rank j, and
// outputs the rows every rank sent here, concatenated in rank order (ranks of the set,
// in order). Empty splits split the first dimension evenly. `received_splits` (int32,
// contiguous, one element per rank of the set) receives how many rows came from each
// rank; waiting on the handle gives it back beside the output. Bad splits throw
// kInvalidArgument here.
HandleId AlltoallAsync(const at::Tensor& input, std::vector<int64_t> splits,
                       const at::Tensor& received_splits, const std::string& name,
                       int32_t process_set = 0);

// Reduces every rank's input (all of one shape; op Sum or Average) and outputs this
// rank's share of the first dimension (see core/row_split.h).
HandleId ReducescatterAsync(const at::Tensor& input, const std::string& name, ReduceOp op,
                            double prescale, double postscale, int32_t process_set = 0,
                            const at::Tensor& landing = at::Tensor());
HandleId GroupedReducescatterAsync(const std::vector<at::Tensor>& inputs, const std::string& name,
                                   ReduceOp op, double prescale, double postscale,
                                   int32_t process_set = 0);

// Completes once every rank of the set has submitted its barrier.
HandleId BarrierAsync(int32_t process_set = 0);

// Marks this rank as out of data: until every rank has joined, other ranks' allreduces
// proceed with the identity of their reduce op from this one. Completes when all have
// joined, writing the last rank to join into `last_joined_rank` (an int32 tensor of one
// element). Global set only, as in Horovod. `device`: the GPU on which this rank's
// tensors for GPU allreduces live (-1: the GPU this rank last submitted a tensor from).
HandleId JoinAsync(const at::Tensor& last_joined_rank, int32_t device = kCpuDevice);

bool Poll(HandleId handle);
// Waits for the operation and returns what it gives (see OperationResult); throws
// horde::Error if it failed. The handle is forgotten either way.
OperationResult WaitOperation(HandleId handle);
// WaitOperation for an operation of one tensor: its output (an in-place operation's:
// the caller's tensor, holding the output).
at::Tensor Synchronize(HandleId handle);
// Forgets a handle that will never be waited on (its owner was dropped), at once or
// when its operation completes.
void Release(HandleId handle);
// Waits for the operation and drops its result and its error (one that another
// operation of the same step reports): its name is free for the next step once this
// returns, which Release does not promise.
void WaitAndDiscard(HandleId handle);
// Operations issued and not yet synchronized or released (for leak checks).
size_t OperationCount();

}  // namespace torch_ops
}  // namespace horde
