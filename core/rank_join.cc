#include "core/rank_join.h"

namespace horde {

void RankJoin::Submitting(Request* request) {
  if (request->op == OpType::kJoin) {
    request->name = kJoinName;
    join_device_ = request->device;
  } else if (request->device != kCpuDevice) {
    last_gpu_device_ = request->device;
  }
}

Status RankJoin::TakeEntries(const Response& response, TensorQueue* queue, const OpRegistry& ops,
                             std::vector<TensorEntry>* entries) const {
  if (!joined_ || response.kind == Response::Kind::kError) {
    queue->TakeEntries(response.names, entries);
    return Status::Ok();
  }
  // In the memory the other ranks' tensors are in, so that every rank runs the same
  // implementation.
  Status status;
  for (size_t i = 0; i < response.names.size(); ++i) {
    std::vector<TensorEntry> taken;
    queue->TakeEntries({response.names[i]}, &taken);
    if (!taken.empty()) {
      entries->push_back(std::move(taken[0]));
      continue;
    }
    TensorEntry identity;
    identity.name = response.names[i];
    if (status.ok()) {
      status = ops.Identity(response.dtype, response.reduce_op,
                            TensorShape{response.tensor_sizes[i]}, IdentityDevice(response),
                            &identity.input);
    }
    identity.output = identity.input;
    identity.callback = [](const Status&) {};
    entries->push_back(std::move(identity));
  }
  if (!status.ok())
    status = Status::Internal("the identity this joined rank contributes: " + status.message());
  return status;
}

int32_t RankJoin::IdentityDevice(const Response& response) const {
  if (response.device == kCpuDevice) return kCpuDevice;
  if (join_device_ != kCpuDevice) return join_device_;
  if (last_gpu_device_ != kCpuDevice) return last_gpu_device_;
  return response.device;
}

void RankJoin::Complete(const Response& join, TensorQueue* queue,
                        std::vector<TensorEntry>* entries) {
  joined_ = false;
  queue->TakeEntries(join.names, entries);
  for (TensorEntry& entry : *entries) {
    Tensor* out = entry.output.get();
    if (out && out->dtype() == DataType::kInt32 && out->size_bytes() >= 4) {
      *static_cast<int32_t*>(out->data()) = join.root;
    }
  }
}

}  // namespace horde
