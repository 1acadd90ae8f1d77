#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "horde/data_type.h"
#include "horde/process_set.h"
#include "horde/torch/handle.h"

namespace horde {

// The reduce ops, under Horovod's names: horde::Average, horde::Sum, ...
// Average is Sum with a post-scale of 1/size(); on integer tensors it truncates toward
// zero. On bool tensors Sum and Max are logical or, Min and Product logical and.
constexpr ReduceOp Sum = ReduceOp::kSum;
constexpr ReduceOp Average = ReduceOp::kAverage;
constexpr ReduceOp Min = ReduceOp::kMin;
constexpr ReduceOp Max = ReduceOp::kMax;
constexpr ReduceOp Product = ReduceOp::kProduct;
// Adaptive summation, for allreduce of floating-point tensors over a power-of-two number
// of ranks (see README, "Adasum").
constexpr ReduceOp Adasum = ReduceOp::kAdasum;

namespace torch {

// Collectives on tensors; every rank must call them with the same name (or, unnamed, in
// the same order), dtype and shape. They work on the tensors' data and are not recorded
// by autograd. Local misuse throws horde::Error at once; a disagreement between ranks
// throws horde::Error (kPreconditionError) on every rank, and the next collective works.
//
// Each runs among the ranks of a process set, the global set (every rank) by default:
// the ranks of the set call it, and "every rank" below means every rank of the set. A
// rank outside the set gets horde::Error (kInvalidArgument). Ranks in results (e.g.
// alltoall's order) count within the set; root ranks are ranks of the job.

// Written in braces, like Python's keywords in order: {horde::Sum, "loss", 1.0, 0.5, set};
// or set a member: AllreduceOptions options; options.process_set = set;
struct AllreduceOptions {
  AllreduceOptions(ReduceOp op = ReduceOp::kAverage, std::string name = "",
                   double prescale_factor = 1.0, double postscale_factor = 1.0,
                   ProcessSet process_set = ProcessSet())
      : op(op),
        name(std::move(name)),
        prescale_factor(prescale_factor),
        postscale_factor(postscale_factor),
        process_set(std::move(process_set)) {}

  ReduceOp op;
  // Operations in flight need distinct names; empty lets the runtime number them.
  std::string name;
  // The input is multiplied by prescale_factor before the reduction and the result by
  // postscale_factor after it.
  double prescale_factor;
  double postscale_factor;
  // The ranks it runs among; Average divides by their number.
  ProcessSet process_set;
};

// The reduction of `tensor` over all ranks, e.g. allreduce(t, {horde::Sum, "loss"}).
at::Tensor allreduce(const at::Tensor& tensor, const AllreduceOptions& options = {});
Handle allreduce_async(const at::Tensor& tensor, const AllreduceOptions& options = {});
// In place: `tensor` receives the result, and is returned.
at::Tensor allreduce_(const at::Tensor& tensor, const AllreduceOptions& options = {});
Handle allreduce_async_(const at::Tensor& tensor, const AllreduceOptions& options = {});

// Every rank's `tensor` concatenated along the first dimension, which may differ per rank.
at::Tensor allgather(const at::Tensor& tensor, const std::string& name = "",
                     const ProcessSet& process_set = ProcessSet());
Handle allgather_async(const at::Tensor& tensor, const std::string& name = "",
                       const ProcessSet& process_set = ProcessSet());

// root_rank's `tensor` on every rank. root_rank is a rank of the job, a member of
// process_set; one outside it throws horde::Error (kInvalidArgument), "broadcast:
// root_rank 0 is not in process set 1 (ranks [1, 3])".
at::Tensor broadcast(const at::Tensor& tensor, int root_rank, const std::string& name = "",
                     const ProcessSet& process_set = ProcessSet());
Handle broadcast_async(const at::Tensor& tensor, int root_rank, const std::string& name = "",
                       const ProcessSet& process_set = ProcessSet());
// In place: `tensor` is overwritten with root_rank's, and returned.
at::Tensor broadcast_(const at::Tensor& tensor, int root_rank, const std::string& name = "",
                      const ProcessSet& process_set = ProcessSet());
Handle broadcast_async_(const at::Tensor& tensor, int root_rank, const std::string& name = "",
                        const ProcessSet& process_set = ProcessSet());

// Sends splits[j] rows of `tensor` (in order along the first dimension) to rank j of the
// set. Empty splits split the first dimension evenly, which must then be a multiple of
// the set's size. Bad splits throw horde::Error (kInvalidArgument) on the rank that
// passed them; the other dimensions must match on every rank. See AlltoallResult.
AlltoallResult alltoall(const at::Tensor& tensor, const std::vector<int64_t>& splits = {},
                        const std::string& name = "", const ProcessSet& process_set = ProcessSet());
AlltoallHandle alltoall_async(const at::Tensor& tensor, const std::vector<int64_t>& splits = {},
                              const std::string& name = "",
                              const ProcessSet& process_set = ProcessSet());

// Reducescatter takes allreduce's options; its op must be Sum or Average.
using ReducescatterOptions = AllreduceOptions;

// The reduction of `tensor` (the same shape on every rank) over all ranks, of which this
// rank keeps its share of the first dimension: rank r (of n in the set) gets d / n rows,
// plus one if r < d % n, in rank order.
at::Tensor reducescatter(const at::Tensor& tensor, const ReducescatterOptions& options = {});
Handle reducescatter_async(const at::Tensor& tensor, const ReducescatterOptions& options = {});

// Returns once every rank of the set has called barrier(); ordered after the set's
// collectives submitted before it.
void barrier(const ProcessSet& process_set = ProcessSet());

// Declares that this rank has run out of data: until every rank has joined, the other
// ranks' allreduces complete with the identity of their reduce op from this one (zeros
// for Sum and Average, so Average still divides by size(); the largest value for Min,
// the lowest for Max, one for Product). Returns the rank (of the job) that joined last,
// on every rank. While a rank has joined, only allreduce can run. Global set only.
// `device`: the CUDA device on which this rank's tensors for GPU allreduces live (-1:
// the GPU this rank last submitted a tensor from); allreduces of CPU tensors get them
// in host memory either way.
int join(int device = -1);

}  // namespace torch
}  // namespace horde
