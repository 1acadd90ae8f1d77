// The in-place forms of torch_ops: the out-of-place operations on the tensor itself or,
// when it is not contiguous, on a contiguous copy; the operation's wait returns the
// tensor, copied back into where needed (see Operation::TakeResult).
#include <string>
#include <vector>

#include "torch_plugin/operation_table.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {
namespace {

// The tensor the operation works on for `tensor`: itself if contiguous, else a
// contiguous copy; outside autograd either way.
at::Tensor Work(const at::Tensor& tensor, const char* op) {
  if (!tensor.defined()) {
    throw Error(Status::InvalidArgument(std::string(op) + ": the tensor is undefined"));
  }
  return tensor.is_contiguous() ? tensor.detach() : tensor.detach().contiguous();
}

void TargetInPlace(HandleId handle, size_t member, const at::Tensor& tensor) {
  OperationTable::OfProcess().SetInPlaceTarget(handle, member, tensor, !tensor.is_contiguous());
}

}  // namespace

HandleId AllreduceInPlaceAsync(const at::Tensor& tensor, const std::string& name, ReduceOp op,
                               double prescale, double postscale, int32_t process_set) {
  const at::Tensor work = Work(tensor, "allreduce");
  const HandleId handle = AllreduceAsync(work, work, name, op, prescale, postscale, process_set);
  TargetInPlace(handle, 0, tensor);
  return handle;
}

HandleId GroupedAllreduceInPlaceAsync(const std::vector<at::Tensor>& tensors,
                                      const std::string& name, ReduceOp op, double prescale,
                                      double postscale, int32_t process_set) {
  std::vector<at::Tensor> works;
  for (const auto& tensor : tensors) works.push_back(Work(tensor, "grouped allreduce"));
  const HandleId handle = GroupedAllreduceAsync(works, works, name, op, prescale, postscale,
                                                process_set);
  for (size_t i = 0; i < tensors.size(); ++i) TargetInPlace(handle, i, tensors[i]);
  return handle;
}

HandleId BroadcastInPlaceAsync(const at::Tensor& tensor, int root_rank, const std::string& name,
                               int32_t process_set) {
  const at::Tensor work = Work(tensor, "broadcast");
  const HandleId handle = BroadcastAsync(work, work, root_rank, name, process_set);
  TargetInPlace(handle, 0, tensor);
  return handle;
}

}  // namespace torch_ops
}  // namespace horde
