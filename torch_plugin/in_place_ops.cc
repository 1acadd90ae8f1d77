// The in-place forms of torch_ops (see in_place_targets.h): the out-of-place operations
// on the tensor's working copy, whose handle returns the tensor.
#include <string>
#include <vector>

#include "torch_plugin/in_place_targets.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {
namespace {

at::Tensor Work(const at::Tensor& tensor, const char* op) {
  if (!tensor.defined()) {
    throw Error(Status::InvalidArgument(std::string(op) + ": the tensor is undefined"));
  }
  return InPlaceTargets::Work(tensor);
}

}  // namespace

HandleId AllreduceInPlaceAsync(const at::Tensor& tensor, const std::string& name, ReduceOp op,
                               double prescale, double postscale, int32_t process_set) {
  const at::Tensor work = Work(tensor, "allreduce");
  const HandleId handle = AllreduceAsync(work, work, name, op, prescale, postscale, process_set);
  InPlaceTargets::OfProcess().Track(handle, tensor);
  return handle;
}

std::vector<HandleId> GroupedAllreduceInPlaceAsync(const std::vector<at::Tensor>& tensors,
                                                   const std::string& name, ReduceOp op,
                                                   double prescale, double postscale,
                                                   int32_t process_set) {
  std::vector<at::Tensor> works;
  for (const auto& tensor : tensors) works.push_back(Work(tensor, "grouped allreduce"));
  std::vector<HandleId> handles = GroupedAllreduceAsync(works, works, name, op, prescale, postscale,
                                                        process_set);
  for (size_t i = 0; i < handles.size(); ++i) {
    InPlaceTargets::OfProcess().Track(handles[i], tensors[i]);
  }
  return handles;
}

HandleId BroadcastInPlaceAsync(const at::Tensor& tensor, int root_rank, const std::string& name,
                               int32_t process_set) {
  const at::Tensor work = Work(tensor, "broadcast");
  const HandleId handle = BroadcastAsync(work, work, root_rank, name, process_set);
  InPlaceTargets::OfProcess().Track(handle, tensor);
  return handle;
}

size_t InPlaceTargetCount() { return InPlaceTargets::OfProcess().size(); }

}  // namespace torch_ops
}  // namespace horde
