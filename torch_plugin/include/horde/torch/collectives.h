#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "core/data_type.h"
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

namespace torch {

// Collectives on tensors; every rank must call them with the same name (or, unnamed, in
// the same order), dtype and shape. They work on the tensors' data and are not recorded
// by autograd. Local misuse throws horde::Error at once; a disagreement between ranks
// throws horde::Error (kPreconditionError) on every rank, and the next collective works.

// Written in braces, like Python's keywords in order: {horde::Sum, "loss", 1.0, 0.5}.
struct AllreduceOptions {
  AllreduceOptions(ReduceOp op = ReduceOp::kAverage, std::string name = "",
                   double prescale_factor = 1.0, double postscale_factor = 1.0)
      : op(op), name(std::move(name)), prescale_factor(prescale_factor),
        postscale_factor(postscale_factor) {}

  ReduceOp op;
  // Operations in flight need distinct names; empty lets the runtime number them.
  std::string name;
  // The input is multiplied by prescale_factor before the reduction and the result by
  // postscale_factor after it.
  double prescale_factor;
  double postscale_factor;
};

// The reduction of `tensor` over all ranks, e.g. allreduce(t, {horde::Sum, "loss"}).
at::Tensor allreduce(const at::Tensor& tensor, const AllreduceOptions& options = {});
Handle allreduce_async(const at::Tensor& tensor, const AllreduceOptions& options = {});
// In place: `tensor` receives the result, and is returned.
at::Tensor allreduce_(const at::Tensor& tensor, const AllreduceOptions& options = {});
Handle allreduce_async_(const at::Tensor& tensor, const AllreduceOptions& options = {});

// Every rank's `tensor` concatenated along the first dimension, which may differ per rank.
at::Tensor allgather(const at::Tensor& tensor, const std::string& name = "");
Handle allgather_async(const at::Tensor& tensor, const std::string& name = "");

// root_rank's `tensor` on every rank.
at::Tensor broadcast(const at::Tensor& tensor, int root_rank, const std::string& name = "");
Handle broadcast_async(const at::Tensor& tensor, int root_rank, const std::string& name = "");
// In place: `tensor` is overwritten with root_rank's, and returned.
at::Tensor broadcast_(const at::Tensor& tensor, int root_rank, const std::string& name = "");
Handle broadcast_async_(const at::Tensor& tensor, int root_rank, const std::string& name = "");

// What alltoall returns: the rows every rank sent here, concatenated in rank order, and
// how many rows came from each rank (int32, one element per rank).
struct AlltoallResult {
  at::Tensor output;
  at::Tensor received_splits;
};

// Sends splits[j] rows of `tensor` (in order along the first dimension) to rank j. Empty
// splits split the first dimension evenly, which must then be a multiple of size(). Bad
// splits throw horde::Error (kInvalidArgument) on the rank that passed them; the other
// dimensions must match on every rank.
AlltoallResult alltoall(const at::Tensor& tensor, const std::vector<int64_t>& splits = {},
                        const std::string& name = "");

// Reducescatter takes allreduce's options; its op must be Sum or Average.
using ReducescatterOptions = AllreduceOptions;

// The reduction of `tensor` (the same shape on every rank) over all ranks, of which this
// rank keeps its share of the first dimension: rank r gets d / size() rows, plus one if
// r < d % size(), in rank order.
at::Tensor reducescatter(const at::Tensor& tensor, const ReducescatterOptions& options = {});
Handle reducescatter_async(const at::Tensor& tensor, const ReducescatterOptions& options = {});

// Returns once every rank has called barrier().
void barrier();

}  // namespace torch
}  // namespace horde
