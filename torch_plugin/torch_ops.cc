#include "torch_plugin/torch_ops.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <utility>

#include "core/api.h"
#include "core/process_set_registry.h"
#include "core/request_validator.h"
#include "gpu_ops/device_ops.h"
#include "mpi_ops/job_communicator.h"
#include "mpi_ops/make_runtime.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/rank_failures.h"
#include "torch_plugin/call_site.h"
#include "torch_plugin/cuda_ready_event.h"
#include "torch_plugin/operation_table.h"
#include "torch_plugin/submission.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

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

// The tensors of one operation (several for a group), checked, not yet queued.
struct Batch {
  // An operation named `name` ("" for the runtime to number) on `target`.
  Batch(const Target& target, const std::string& name)
      : context(target.context),
        call_site(CallSiteFor(target.runtime->config().call_sites, name)) {}
  std::string context;    // see Target
  std::string call_site;  // every request's: where the program submitted the operation
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  std::vector<at::Tensor> inputs;    // what outputs the operation allocates are made like
  std::vector<at::Tensor> landings;  // where they land instead, when defined
};

// Checks one tensor's request and adds it to the batch.
void AddTensor(Request request, const at::Tensor& input, const at::Tensor& output, Batch* batch) {
  TensorEntry entry;
  BindTensors(input, output, &request, &entry);
  request.call_site = batch->call_site;
  batch->requests.push_back(std::move(request));
  batch->entries.push_back(std::move(entry));
  batch->inputs.push_back(input);
  batch->landings.emplace_back();
}

// Gives the batch one operation, member i completed by entry i, and returns its handle.
// Only once every tensor is checked, so a rejected batch leaks nothing.
HandleId Issue(Batch* batch, bool grouped) {
  OperationTable& operations = OperationTable::OfProcess();
  const HandleId handle = operations.Allocate(batch->entries.size(), grouped, batch->context);
  for (size_t i = 0; i < batch->entries.size(); ++i) {
    TensorEntry& entry = batch->entries[i];
    if (entry.output) {
      operations.SetOutput(handle, i, entry.output);
    } else {
      OutputAllocator allocate = batch->landings[i].defined()
                                     ? LandingAllocator(batch->landings[i])
                                     : TorchOutputAllocator(batch->inputs[i]);
      entry.allocate_output = [allocate, handle, i](const TensorShape& shape,
                                                    std::shared_ptr<Tensor>* out) {
        HORDE_RETURN_IF_ERROR(allocate(shape, out));
        OperationTable::OfProcess().SetOutput(handle, i, *out);
        return Status::Ok();
      };
    }
    entry.callback = [handle, i](const Status& status) {
      OperationTable::OfProcess().Complete(handle, i, status);
    };
  }
  return handle;
}

// Ends and forgets the operation that could not be queued (no entry of it will
// complete it), and throws `status`.
[[noreturn]] void Abandon(const Batch& batch, HandleId handle, const Status& status) {
  OperationTable& operations = OperationTable::OfProcess();
  for (size_t i = 0; i < batch.entries.size(); ++i) operations.Complete(handle, i, status);
  operations.Release(handle);
  throw Error(InContext(status, batch.context));
}

// Queues the batch's one tensor and returns the operation's handle.
HandleId EnqueueOne(Runtime& runtime, Batch batch) {
  const HandleId handle = Issue(&batch, /*grouped=*/false);
  Status status = runtime.Enqueue(std::move(batch.requests[0]), std::move(batch.entries[0]));
  if (!status.ok()) Abandon(batch, handle, status);
  return handle;
}

// `landing`: where an output the operation shapes lands (undefined: allocated).
HandleId EnqueueOnSet(Request request, const at::Tensor& input, const at::Tensor& output,
                      int32_t process_set, const at::Tensor& landing = at::Tensor()) {
  Target target = RequireSet(process_set);
  Batch batch(target, request.name);
  if (landing.defined()) CheckLanding(input, landing, OpTypeName(request.op));
  AddTensor(std::move(request), input, output, &batch);
  batch.landings.back() = landing;
  return EnqueueOne(*target.runtime, std::move(batch));
}

// Queues `prototype` on each input (into outputs[i] where given, else into an output the
// operation allocates) as one group, all or nothing: one operation of many members.
HandleId EnqueueGroupOnSet(const Request& prototype, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& outputs, const std::string& name,
                           int32_t process_set) {
  Target target = RequireSet(process_set);
  if (inputs.empty()) {
    throw Error(Status::InvalidArgument(std::string("grouped ") + OpTypeName(prototype.op) +
                                        " needs a non-empty list of tensors"));
  }
  Batch batch(target, name);
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {
      AddTensor(prototype, inputs[i], i < outputs.size() ? outputs[i] : at::Tensor(), &batch);
    }
  } catch (const Error& e) {
    throw Error(InContext(e.status(), batch.context));
  }
  const HandleId handle = Issue(&batch, /*grouped=*/true);
  Status status = target.runtime->EnqueueGroup(name, &batch.requests, &batch.entries);
  if (!status.ok()) Abandon(batch, handle, status);
  return handle;
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
  ThrowIfError(InitRuntime(mpi::RuntimeFactoryWith(gpu::GpuDeviceOps()), process_sets,
                           mpi::ProcessSetFactoryWith(gpu::GpuDeviceOps()), &ids));
  return ids;
}

void Shutdown() { ShutdownRuntime(); }

int32_t AddProcessSet(const std::vector<int>& ranks) {
  int32_t id = -1;
  ThrowIfError(horde::AddProcessSet(ranks, mpi::ProcessSetFactoryWith(gpu::GpuDeviceOps()), &id));
  return id;
}

void RemoveProcessSet(int32_t id) { ThrowIfError(horde::RemoveProcessSet(id)); }

void Abort(const std::string& failure) {
  mpi::MarkProcessFailed();
  AbortRuntimes(failure);
}

bool SurvivesRankFailures() { return mpi::SurvivesRankFailures(); }

std::map<int32_t, std::vector<int>> RecoverInPlace() {
  std::map<int32_t, std::vector<int>> sets;
  ThrowIfError(RebuildRuntimes(mpi::JobReformOverMpi(),
                               mpi::RuntimeFactoryWith(gpu::GpuDeviceOps()),
                               mpi::ProcessSetFactoryWith(gpu::GpuDeviceOps()), &sets));
  return sets;
}

bool IsInitialized() {
  auto runtime = CurrentRuntime();
  return runtime && !runtime->stopped();
}

Topology CurrentTopology() { return RequireRuntime()->topology(); }

RuntimeStats Stats() { return RequireRuntime()->stats(); }

StragglerReport Straggler() { return RequireRuntime()->straggler_report(); }

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
  return EnqueueOnSet(ReductionRequest(OpType::kAllreduce, name, op, prescale, postscale), input,
                      output, process_set);
}

HandleId AllgatherAsync(const at::Tensor& input, const std::string& name, int32_t process_set,
                        const at::Tensor& landing) {
  Request request;
  request.op = OpType::kAllgather;
  request.name = name;
  return EnqueueOnSet(std::move(request), input, at::Tensor(), process_set, landing);
}

HandleId BroadcastAsync(const at::Tensor& input, const at::Tensor& output, int root_rank,
                        const std::string& name, int32_t process_set) {
  Target target = RequireSet(process_set);
  Request request;
  request.op = OpType::kBroadcast;
  request.name = name;
  request.root = RootInSet(root_rank, process_set, target.ranks);
  Batch batch(target, name);
  AddTensor(std::move(request), input, output, &batch);
  return EnqueueOne(*target.runtime, std::move(batch));
}

HandleId GroupedAllreduceAsync(const std::vector<at::Tensor>& inputs,
                               const std::vector<at::Tensor>& outputs, const std::string& name,
                               ReduceOp op, double prescale, double postscale,
                               int32_t process_set) {
  if (inputs.size() != outputs.size()) {
    throw Error(Status::InvalidArgument("grouped allreduce needs one output per tensor; got " +
                                        std::to_string(inputs.size()) + " tensors and " +
                                        std::to_string(outputs.size()) + " outputs"));
  }
  return EnqueueGroupOnSet(ReductionRequest(OpType::kAllreduce, "", op, prescale, postscale),
                           inputs, outputs, name, process_set);
}

HandleId GroupedAllgatherAsync(const std::vector<at::Tensor>& inputs, const std::string& name,
                               int32_t process_set) {
  Request request;
  request.op = OpType::kAllgather;
  return EnqueueGroupOnSet(request, inputs, {}, name, process_set);
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
  Batch batch(target, name);
  AddTensor(std::move(request), input, at::Tensor(), &batch);
  Status status = ResolveAlltoallSplits(batch.requests[0], set_size, &splits);
  if (!status.ok()) throw Error(InContext(status, batch.context));
  batch.entries[0].splits = std::move(splits);
  batch.entries[0].received_splits = std::make_shared<TorchTensor>(received_splits);
  const HandleId handle = Issue(&batch, /*grouped=*/false);
  OperationTable::OfProcess().SetReceivedSplits(handle, received_splits);
  status = target.runtime->Enqueue(std::move(batch.requests[0]), std::move(batch.entries[0]));
  if (!status.ok()) Abandon(batch, handle, status);
  return handle;
}

HandleId ReducescatterAsync(const at::Tensor& input, const std::string& name, ReduceOp op,
                            double prescale, double postscale, int32_t process_set,
                            const at::Tensor& landing) {
  return EnqueueOnSet(ReductionRequest(OpType::kReducescatter, name, op, prescale, postscale),
                      input, at::Tensor(), process_set, landing);
}

HandleId GroupedReducescatterAsync(const std::vector<at::Tensor>& inputs, const std::string& name,
                                   ReduceOp op, double prescale, double postscale,
                                   int32_t process_set) {
  return EnqueueGroupOnSet(ReductionRequest(OpType::kReducescatter, "", op, prescale, postscale),
                           inputs, {}, name, process_set);
}

HandleId BarrierAsync(int32_t process_set) {
  Request request;
  request.op = OpType::kBarrier;
  const at::Tensor nothing = at::empty({0}, at::kByte);
  return EnqueueOnSet(std::move(request), nothing, nothing, process_set);
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
  Batch batch(target, request.name);
  AddTensor(std::move(request), last_joined_rank, last_joined_rank, &batch);
  // A join request's device is where its zeros go, not where its (host) output lives.
  batch.requests[0].device = device;
  return EnqueueOne(*target.runtime, std::move(batch));
}

bool Poll(HandleId handle) {
  bool done = false;
  ThrowIfError(OperationTable::OfProcess().Poll(handle, &done));
  return done;
}

OperationResult WaitOperation(HandleId handle) {
  Operation operation;
  ThrowIfError(OperationTable::OfProcess().WaitAndTake(handle, &operation));
  return operation.TakeResult();
}

at::Tensor Synchronize(HandleId handle) { return WaitOperation(handle).outputs.at(0); }

void Release(HandleId handle) { OperationTable::OfProcess().Release(handle); }

void WaitAndDiscard(HandleId handle) {
  Operation operation;
  OperationTable::OfProcess().WaitAndTake(handle, &operation);
}

size_t OperationCount() { return OperationTable::OfProcess().size(); }

}  // namespace torch_ops
}  // namespace horde
