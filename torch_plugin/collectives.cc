// The C++ collectives: argument handling over torch_ops (shared with Python), no logic
// of their own.
#include "horde/torch/collectives.h"

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

// Runs `submit(work)` on the tensor's own memory, or on a contiguous copy that the
// handle copies back when the tensor is not contiguous; either way the handle returns
// the caller's tensor, as torch's in-place operations do.
template <typename Submit>
Handle InPlace(const at::Tensor& tensor, const char* op, Submit submit) {
  RequireDefined(tensor, op);
  const bool contiguous = tensor.is_contiguous();
  at::Tensor work = contiguous ? tensor.detach() : tensor.detach().contiguous();
  return detail::MakeHandle(submit(work), tensor, !contiguous);
}

}  // namespace

Handle allreduce_async(const at::Tensor& tensor, const AllreduceOptions& options) {
  at::Tensor input = Input(tensor, "allreduce");
  const int id = torch_ops::AllreduceAsync(input, NewOutput(input), options.name, options.op,
                                           options.prescale_factor, options.postscale_factor);
  return detail::MakeHandle(id, at::Tensor(), false);
}

at::Tensor allreduce(const at::Tensor& tensor, const AllreduceOptions& options) {
  return allreduce_async(tensor, options).wait();
}

Handle allreduce_async_(const at::Tensor& tensor, const AllreduceOptions& options) {
  return InPlace(tensor, "allreduce", [&](const at::Tensor& work) {
    return torch_ops::AllreduceAsync(work, work, options.name, options.op,
                                     options.prescale_factor, options.postscale_factor);
  });
}

at::Tensor allreduce_(const at::Tensor& tensor, const AllreduceOptions& options) {
  return allreduce_async_(tensor, options).wait();
}

Handle allgather_async(const at::Tensor& tensor, const std::string& name) {
  const int id = torch_ops::AllgatherAsync(Input(tensor, "allgather"), name);
  return detail::MakeHandle(id, at::Tensor(), false);
}

at::Tensor allgather(const at::Tensor& tensor, const std::string& name) {
  return allgather_async(tensor, name).wait();
}

Handle broadcast_async(const at::Tensor& tensor, int root_rank, const std::string& name) {
  at::Tensor input = Input(tensor, "broadcast");
  const int id = torch_ops::BroadcastAsync(input, NewOutput(input), root_rank, name);
  return detail::MakeHandle(id, at::Tensor(), false);
}

at::Tensor broadcast(const at::Tensor& tensor, int root_rank, const std::string& name) {
  return broadcast_async(tensor, root_rank, name).wait();
}

Handle broadcast_async_(const at::Tensor& tensor, int root_rank, const std::string& name) {
  return InPlace(tensor, "broadcast", [&](const at::Tensor& work) {
    return torch_ops::BroadcastAsync(work, work, root_rank, name);
  });
}

at::Tensor broadcast_(const at::Tensor& tensor, int root_rank, const std::string& name) {
  return broadcast_async_(tensor, root_rank, name).wait();
}

AlltoallResult alltoall(const at::Tensor& tensor, const std::vector<int64_t>& splits,
                        const std::string& name) {
  at::Tensor input = Input(tensor, "alltoall");
  AlltoallResult result;
  result.received_splits = at::empty({torch_ops::CurrentTopology().size}, at::kInt);
  const int id = torch_ops::AlltoallAsync(input, splits, result.received_splits, name);
  result.output = detail::MakeHandle(id, at::Tensor(), false).wait();
  return result;
}

Handle reducescatter_async(const at::Tensor& tensor, const ReducescatterOptions& options) {
  const int id = torch_ops::ReducescatterAsync(Input(tensor, "reducescatter"), options.name,
                                               options.op, options.prescale_factor,
                                               options.postscale_factor);
  return detail::MakeHandle(id, at::Tensor(), false);
}

at::Tensor reducescatter(const at::Tensor& tensor, const ReducescatterOptions& options) {
  return reducescatter_async(tensor, options).wait();
}

void barrier() { detail::MakeHandle(torch_ops::BarrierAsync(), at::Tensor(), false).wait(); }

}  // namespace torch
}  // namespace horde
