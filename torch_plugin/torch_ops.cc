#include "torch_plugin/torch_ops.h"

#include <algorithm>

#include "core/api.h"
#include "core/process_set_registry.h"
#include "core/request_validator.h"
#include "mpi_ops/make_runtime.h"
#include "mpi_ops/mpi_context.h"
#include "torch_plugin/cuda_ready_event.h"
#include "torch_plugin/handle_table.h"
#include "torch_plugin/in_place_targets.h"
#include "torch_plugin/submission.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

// Handles live at the API boundary, beside the runtime pointer, for as long as the process.
HandleTable& Handles() {
  static HandleTable* table = new HandleTable();
  return *table;
}

std::shared_ptr<Runtime> RequireRuntime() { return RequireSet(0).runtime; }

// The set's own rank of world rank `root_rank`, which must be in the set. The global
// set's ranks are the world's, and its runtime checks the range.
int RootInSet(int root_rank, int32_t process_set, const std::vector<int>& ranks) {
  if (process_set == 0) return root_rank;
  auto it = std::find(ranks.begin(), ranks.end(), root_rank);
  if (it == ranks.end()) {
    throw Error(Status::InvalidArgument("broadcast: root_rank " + std::to_string(root_rank) +
                                        " is not in process set " + std::to_string(process_set) +
                                        " (ranks " + RanksString(ranks) + ")"));
  }
  return static_cast<int>(it - ranks.begin());
}

// Operations checked and given handles, not yet queued.
struct Batch {
  std::string context;  // see Target
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  std::vector<HandleId> handles;
};

// Checks one operation's tensors and adds it, with a new handle, to the batch.
void Prepare(Request request, const at::Tensor& input, const at::Tensor& output, Batch* batch) {
  TensorEntry entry;
  Describe(input, output, &request, &entry);  // before a handle exists, so a failure leaks none
  HandleTable& handles = Handles();
  const HandleId handle = handles.Allocate();
  if (entry.output) {
    handles.SetOutput(handle, entry.output);
  } else {
    OutputAllocator allocate = TorchOutputAllocator(input);
    entry.allocate_output = [allocate, handle](const TensorShape& shape,
                                               std::shared_ptr<Tensor>* out) {
      HORDE_RETURN_IF_ERROR(allocate(shape, out));
      Handles().SetOutput(handle, *out);
      return Status::Ok();
    };
  }
  entry.callback = [handle, context = batch->context](const Status& status) {
    Handles().Complete(handle, InContext(status, context));
  };
  batch->requests.push_back(std::move(request));
  batch->entries.push_back(std::move(entry));
  batch->handles.push_back(handle);
}

// Drops the batch's handles and throws `status`.
[[noreturn]] void Abandon(const Batch& batch, const Status& status) {
  const Status failure = InContext(status, batch.context);
  for (HandleId handle : batch.handles) {
    std::shared_ptr<Tensor> unused;
    Handles().Complete(handle, failure);
    Handles().WaitAndRelease(handle, &unused);
  }
  throw Error(failure);
}

// Queues the batch, all or nothing, and returns its handles.
std::vector<HandleId> EnqueueBatch(Runtime& runtime, Batch batch) {
  Status status = runtime.Enqueue(&batch.requests, &batch.entries);
  if (!status.ok()) Abandon(batch, status);
  return batch.handles;
}

HandleId Submit(Request request, const at::Tensor& input, const at::Tensor& output,
                int32_t process_set) {
  Target target = RequireSet(process_set);
  Batch batch{target.context};
  Prepare(std::move(request), input, output, &batch);
  return EnqueueBatch(*target.runtime, std::move(batch))[0];
}

// Queues `prototype` on each input (into outputs[i] where given, else into an output the
// operation allocates) as one group, all or nothing.
std::vector<HandleId> SubmitGroup(const Request& prototype, const std::vector<at::Tensor>& inputs,
                                  const std::vector<at::Tensor>& outputs, const std::string& name,
                                  int32_t process_set) {
  Target target = RequireSet(process_set);
  if (inputs.empty()) {
    throw Error(Status::InvalidArgument(std::string("grouped ") + OpTypeName(prototype.op) +
                                        " needs a non-empty list of tensors"));
  }
  Batch batch{target.context};
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {
      Prepare(prototype, inputs[i], i < outputs.size() ? outputs[i] : at::Tensor(), &batch);
    }
  } catch (const Error& e) {
    Abandon(batch, e.status());
  }
  Status status = target.runtime->EnqueueGroup(name, &batch.requests, &batch.entries);
  if (!status.ok()) Abandon(batch, status);
  return batch.handles;
}

// An allreduce's or reducescatter's request.
Request ReductionRequest(OpType type, const std::string& name, ReduceOp op, double prescale,
                         double postscale) {
  Request request;
  request.op = type;
  request.name = name;
  request.reduce_op = op;
  request.prescale = prescale;
  request.postscale = postscale;
  return request;
}

void CheckReceivedSplits(const at::Tensor& received_splits, int world_size) {
  CheckTensor(received_splits, "received_splits", "alltoall");
  if (received_splits.scalar_type() != at::kInt || received_splits.numel() != world_size) {
    throw Error(Status::InvalidArgument(
        "alltoall: received_splits must be an int32 tensor with one element per rank (" +
        std::to_string(world_size) + ")"));
  }
}

}  // namespace

std::vector<int32_t> Init(const std::vector<std::vector<int>>& process_sets) {
  std::vector<int32_t> ids;
  ThrowIfError(InitRuntime(mpi::MakeRuntime, process_sets, mpi::MakeProcessSetRuntime, &ids));
  return ids;
}

void Shutdown() { ShutdownRuntime(); }

int32_t AddProcessSet(const std::vector<int>& ranks) {
  int32_t id = -1;
  ThrowIfError(horde::AddProcessSet(ranks, mpi::MakeProcessSetRuntime, &id));
  return id;
}

void RemoveProcessSet(int32_t id) { ThrowIfError(horde::RemoveProcessSet(id)); }

void Abort(const std::string& failure) {
  mpi::MarkProcessFailed();
  AbortRuntimes(failure);
}

bool IsInitialized() {
  auto runtime = CurrentRuntime();
  return runtime && !runtime->stopped();
}

Topology CurrentTopology() { return RequireRuntime()->topology(); }

RuntimeStats Stats() { return RequireRuntime()->stats(); }

void StartTimeline(const std::string& path, bool mark_cycles) {
  ThrowIfError(RequireRuntime()->StartTimeline(path, mark_cycles));
}

void StopTimeline() { ThrowIfError(RequireRuntime()->StopTimeline()); }

bool MpiThreadsSupported() {
  RequireRuntime();
  return mpi::MpiThreadsSupported();
}

HandleId AllreduceAsync(const at::Tensor& input, const at::Tensor& output, const std::string& name,
                        ReduceOp op, double prescale, double postscale, int32_t process_set) {
  return Submit(ReductionRequest(OpType::kAllreduce, name, op, prescale, postscale), input, output,
                process_set);
}

HandleId AllgatherAsync(const at::Tensor& input, const std::string& name, int32_t process_set) {
  Request request;
  request.op = OpType::kAllgather;
  request.name = name;
  return Submit(std::move(request), input, at::Tensor(), process_set);
}

HandleId BroadcastAsync(const at::Tensor& input, const at::Tensor& output, int root_rank,
                        const std::string& name, int32_t process_set) {
  Target target = RequireSet(process_set);
  Request request;
  request.op = OpType::kBroadcast;
  request.name = name;
  request.root = RootInSet(root_rank, process_set, target.ranks);
  Batch batch{target.context};
  Prepare(std::move(request), input, output, &batch);
  return EnqueueBatch(*target.runtime, std::move(batch))[0];
}

std::vector<HandleId> GroupedAllreduceAsync(const std::vector<at::Tensor>& inputs,
                                            const std::vector<at::Tensor>& outputs,
                                            const std::string& name, ReduceOp op, double prescale,
                                            double postscale, int32_t process_set) {
  if (inputs.size() != outputs.size()) {
    throw Error(Status::InvalidArgument("grouped allreduce needs one output per tensor; got " +
                                        std::to_string(inputs.size()) + " tensors and " +
                                        std::to_string(outputs.size()) + " outputs"));
  }
  return SubmitGroup(ReductionRequest(OpType::kAllreduce, "", op, prescale, postscale), inputs,
                     outputs, name, process_set);
}

std::vector<HandleId> GroupedAllgatherAsync(const std::vector<at::Tensor>& inputs,
                                            const std::string& name, int32_t process_set) {
  Request request;
  request.op = OpType::kAllgather;
  return SubmitGroup(request, inputs, {}, name, process_set);
}

HandleId AlltoallAsync(const at::Tensor& input, std::vector<int64_t> splits,
                       const at::Tensor& received_splits, const std::string& name,
                       int32_t process_set) {
  Target target = RequireSet(process_set);
  const int set_size = static_cast<int>(target.ranks.size());
  CheckReceivedSplits(received_splits, set_size);
  Request request;
  request.op = OpType::kAlltoall;
  request.name = name;
  Batch batch{target.context};
  Prepare(std::move(request), input, at::Tensor(), &batch);
  Status status = ResolveAlltoallSplits(batch.requests[0], set_size, &splits);
  if (!status.ok()) Abandon(batch, status);
  batch.entries[0].splits = std::move(splits);
  batch.entries[0].received_splits = std::make_shared<TorchTensor>(received_splits);
  return EnqueueBatch(*target.runtime, std::move(batch))[0];
}

HandleId ReducescatterAsync(const at::Tensor& input, const std::string& name, ReduceOp op,
                            double prescale, double postscale, int32_t process_set) {
  return Submit(ReductionRequest(OpType::kReducescatter, name, op, prescale, postscale), input,
                at::Tensor(), process_set);
}

std::vector<HandleId> GroupedReducescatterAsync(const std::vector<at::Tensor>& inputs,
                                                const std::string& name, ReduceOp op,
                                                double prescale, double postscale,
                                                int32_t process_set) {
  return SubmitGroup(ReductionRequest(OpType::kReducescatter, "", op, prescale, postscale), inputs,
                     {}, name, process_set);
}

HandleId BarrierAsync(int32_t process_set) {
  Request request;
  request.op = OpType::kBarrier;
  const at::Tensor nothing = at::empty({0}, at::kByte);
  return Submit(std::move(request), nothing, nothing, process_set);
}

HandleId JoinAsync(const at::Tensor& last_joined_rank, int32_t device) {
  if (device < kCpuDevice) {
    throw Error(
        Status::InvalidArgument("join: device " + std::to_string(device) +
                                " is not a device index; expected -1 or a CUDA device index >= 0"));
  }
  Request request;
  request.op = OpType::kJoin;
  Target target = RequireSet(0);
  Batch batch{target.context};
  Prepare(std::move(request), last_joined_rank, last_joined_rank, &batch);
  // A join request's device is where its zeros go, not where its (host) output lives.
  batch.requests[0].device = device;
  return EnqueueBatch(*target.runtime, std::move(batch))[0];
}

bool Poll(HandleId handle) {
  bool done = false;
  ThrowIfError(Handles().Poll(handle, &done));
  return done;
}

at::Tensor Synchronize(HandleId handle) {
  std::shared_ptr<Tensor> output;
  const Status status = Handles().WaitAndRelease(handle, &output);
  if (!status.ok()) {
    InPlaceTargets::OfProcess().Forget(handle);
    throw Error(status);
  }
  const at::Tensor& result = static_cast<TorchTensor*>(output.get())->tensor();
  return InPlaceTargets::OfProcess().Finish(handle, result);
}

void Release(HandleId handle) {
  Handles().Release(handle);
  InPlaceTargets::OfProcess().Forget(handle);
}

size_t HandleCount() { return Handles().size(); }

}  // namespace torch_ops
}  // namespace horde
