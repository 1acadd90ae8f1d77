// The C++ collectives: argument handling over torch_ops (shared with Python), no logic
// of their own.
#include "horde/torch/collectives.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>

#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch {
namespace {

void RequireDefined(const at::Tensor& tensor, const char* op) {
  if (!tensor.defined()) {
    throw Error(Status::InvalidArgument(std::string(op) + ": the tensor is undefined"));
  }
}

// The operation's input: the tensor's data, laid out contiguously, outside autograd.
at::Tensor Input(const at::Tensor& tensor, const char* op) {
  RequireDefined(tensor, op);
  return tensor.detach().contiguous();
}

at::Tensor NewOutput(const at::Tensor& input) {
  return at::empty_like(input, at::MemoryFormat::Contiguous);
}

}  // namespace

Handle allreduce_async(const at::Tensor& tensor, const AllreduceOptions& options) {
  at::Tensor input = Input(tensor, "allreduce");
  const int64_t id = torch_ops::AllreduceAsync(input, NewOutput(input), options.name, options.op,
                                               options.prescale_factor, options.postscale_factor,
                                               options.process_set.id());
  return detail::MakeHandle(id);
}

at::Tensor allreduce(const at::Tensor& tensor, const AllreduceOptions& options) {
  return allreduce_async(tensor, options).wait();
}

Handle allreduce_async_(const at::Tensor& tensor, const AllreduceOptions& options) {
  return detail::MakeHandle(
      torch_ops::AllreduceInPlaceAsync(tensor, options.name, options.op, options.prescale_factor,
                                       options.postscale_factor, options.process_set.id()));
}

at::Tensor allreduce_(const at::Tensor& tensor, const AllreduceOptions& options) {
  return allreduce_async_(tensor, options).wait();
}

Handle allgather_async(const at::Tensor& tensor, const std::string& name,
                       const ProcessSet& process_set) {
  const int64_t id = torch_ops::AllgatherAsync(Input(tensor, "allgather"), name, process_set.id());
  return detail::MakeHandle(id);
}

at::Tensor allgather(const at::Tensor& tensor, const std::string& name,
                     const ProcessSet& process_set) {
  return allgather_async(tensor, name, process_set).wait();
}

// torch_ops takes the root as a rank of the job and checks that it is in the set.
Handle broadcast_async(const at::Tensor& tensor, int root_rank, const std::string& name,
                       const ProcessSet& process_set) {
  at::Tensor input = Input(tensor, "broadcast");
  const int64_t id = torch_ops::BroadcastAsync(input, NewOutput(input), root_rank, name,
                                               process_set.id());
  return detail::MakeHandle(id);
}

at::Tensor broadcast(const at::Tensor& tensor, int root_rank, const std::string& name,
                     const ProcessSet& process_set) {
  return broadcast_async(tensor, root_rank, name, process_set).wait();
}

Handle broadcast_async_(const at::Tensor& tensor, int root_rank, const std::string& name,
                        const ProcessSet& process_set) {
  return detail::MakeHandle(
      torch_ops::BroadcastInPlaceAsync(tensor, root_rank, name, process_set.id()));
}

at::Tensor broadcast_(const at::Tensor& tensor, int root_rank, const std::string& name,
                      const ProcessSet& process_set) {
  return broadcast_async_(tensor, root_rank, name, process_set).wait();
}

AlltoallHandle alltoall_async(const at::Tensor& tensor, const std::vector<int64_t>& splits,
                              const std::string& name, const ProcessSet& process_set) {
  at::Tensor input = Input(tensor, "alltoall");
  // Sized for the set; a rank outside it gets torch_ops' error before the size matters.
  const int set_size = process_set.included() ? process_set.size() : 0;
  at::Tensor received_splits = at::empty({set_size}, at::kInt);
  const int64_t id = torch_ops::AlltoallAsync(input, splits, received_splits, name,
                                              process_set.id());
  return AlltoallHandle(detail::MakeHandle(id));
}

AlltoallResult alltoall(const at::Tensor& tensor, const std::vector<int64_t>& splits,
                        const std::string& name, const ProcessSet& process_set) {
  return alltoall_async(tensor, splits, name, process_set).wait();
}

Handle reducescatter_async(const at::Tensor& tensor, const ReducescatterOptions& options) {
  const int64_t id = torch_ops::ReducescatterAsync(
      Input(tensor, "reducescatter"), options.name, options.op, options.prescale_factor,
      options.postscale_factor, options.process_set.id());
  return detail::MakeHandle(id);
}

at::Tensor reducescatter(const at::Tensor& tensor, const ReducescatterOptions& options) {
  return reducescatter_async(tensor, options).wait();
}

void barrier(const ProcessSet& process_set) {
  detail::MakeHandle(torch_ops::BarrierAsync(process_set.id())).wait();
}

int join(int device) {
  const at::Tensor last_joined_rank = at::zeros({1}, at::kInt);
  at::Tensor output = detail::MakeHandle(torch_ops::JoinAsync(last_joined_rank, device)).wait();
  return output.item<int>();
}

}  // namespace torch
}  // namespace horde
