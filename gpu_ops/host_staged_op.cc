#include "gpu_ops/host_staged_op.h"

#include "core/op_registry.h"
#include "gpu_ops/cuda_check.h"
#include "gpu_ops/nccl_check.h"

namespace horde {
namespace gpu {
namespace {

bool OnGpu(const std::shared_ptr<Tensor>& tensor) { return tensor && tensor->device() >= 0; }

// Enqueues a copy of `from` into `to` (same byte size; either may be on the GPU).
Status Copy(Tensor& from, Tensor& to, cudaStream_t stream, const std::string& what) {
  const int64_t bytes = from.size_bytes();
  if (bytes == 0) return Status::Ok();
  return CheckCuda(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDefault, stream),
                   "cudaMemcpyAsync (host staging)", what);
}

// A (zero-filled) host tensor of `tensor`'s type and shape, or `tensor` itself if it is
// on the host; an error, not an exception, when host memory runs out.
Status HostLike(const std::shared_ptr<Tensor>& tensor, std::shared_ptr<Tensor>* out) {
  if (!OnGpu(tensor)) {
    *out = tensor;
    return Status::Ok();
  }
  return HostIdentity(tensor->dtype(), ReduceOp::kSum, tensor->shape(), kCpuDevice, out);
}

}  // namespace

Status HostStagedOp::Stage(std::vector<TensorEntry>& entries, cudaStream_t stream,
                           const std::string& what, std::vector<TensorEntry>* host) {
  HORDE_RETURN_IF_ERROR(WaitForInputs(entries, stream, what));
  host->resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    TensorEntry& e = entries[i];
    TensorEntry& h = (*host)[i];
    h.name = e.name;
    HORDE_RETURN_IF_ERROR(HostLike(e.input, &h.input));
    if (h.input != e.input) HORDE_RETURN_IF_ERROR(Copy(*e.input, *h.input, stream, what));
    // In place stays in place; a separate output gets its own host copy; an output
    // whose shape only negotiation decides is allocated on the host and mirrored below.
    if (e.output == e.input) {
      h.output = h.input;
    } else if (e.output) {
      HORDE_RETURN_IF_ERROR(HostLike(e.output, &h.output));
    }
    const DataType dtype = e.input->dtype();
    h.allocate_output = [dtype](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
      return HostIdentity(dtype, ReduceOp::kSum, shape, kCpuDevice, out);
    };
    h.splits = e.splits;
    HORDE_RETURN_IF_ERROR(HostLike(e.received_splits, &h.received_splits));
    h.callback = [](const Status&) {};
  }
  return CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", what);
}

Status HostStagedOp::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName(OpTypeName(response.op), response.names) +
                           " (host staging)";
  int device = response.device;
  for (const auto& e : entries) {
    if (OnGpu(e.input)) device = e.input->device();
  }
  cudaStream_t stream = nullptr;
  std::vector<TensorEntry> host;
  Status staged = r_->devices.Stream(device, &stream);
  if (staged.ok()) staged = Stage(entries, stream, what, &host);
  // Copies a failed staging enqueued still read its host buffers: let them finish.
  if (!staged.ok() && stream != nullptr) cudaStreamSynchronize(stream);
  // A rank that could not stage its tensors must not leave the others in MPI.
  HORDE_RETURN_IF_ERROR(r_->AgreeToLaunch(staged, what));

  Response on_host = response;
  on_host.device = kCpuDevice;
  HORDE_RETURN_IF_ERROR(host_op_->Execute(host, on_host));

  for (size_t i = 0; i < entries.size(); ++i) {
    TensorEntry& e = entries[i];
    TensorEntry& h = host[i];
    if (!e.output) {
      HORDE_RETURN_IF_ERROR(e.allocate_output(h.output->shape(), &e.output));
      if (OnGpu(e.output)) HORDE_RETURN_IF_ERROR(WaitForLegacyStream(stream, what));
    }
    if (h.output != e.output) HORDE_RETURN_IF_ERROR(Copy(*h.output, *e.output, stream, what));
    if (h.received_splits != e.received_splits) {
      HORDE_RETURN_IF_ERROR(Copy(*h.received_splits, *e.received_splits, stream, what));
    }
  }
  return CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", what);
}

}  // namespace gpu
}  // namespace horde
