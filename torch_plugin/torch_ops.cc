#include "torch_plugin/torch_ops.h"

#include "core/api.h"
#include "mpi_ops/make_runtime.h"
#include "torch_plugin/handle_table.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

// Handles live at the API boundary, beside the runtime pointer, for as long as the process.
HandleTable& Handles() {
  static HandleTable* table = new HandleTable();
  return *table;
}

std::shared_ptr<Runtime> RequireRuntime() {
  auto runtime = CurrentRuntime();
  if (!runtime) {
    throw Error(Status::InvalidArgument("horde has not been initialized; call hvd.init() first"));
  }
  return runtime;
}

void CheckTensor(const at::Tensor& t, const char* role, const std::string& op) {
  if (!t.defined()) throw Error(Status::InvalidArgument(op + ": the " + role + " tensor is undefined"));
  if (!t.is_contiguous()) {
    throw Error(Status::InvalidArgument(op + ": the " + role + " tensor must be contiguous"));
  }
}

void CheckOutputMatches(const at::Tensor& input, const at::Tensor& output, const std::string& op) {
  CheckTensor(output, "output", op);
  if (output.scalar_type() != input.scalar_type() || !output.sizes().equals(input.sizes())) {
    throw Error(Status::InvalidArgument(
        op + ": the output tensor must have the input's dtype and shape; got " +
        c10::toString(output.scalar_type()) + ShapeString(TensorShape(output.sizes().begin(), output.sizes().end())) +
        " for input " + c10::toString(input.scalar_type()) +
        ShapeString(TensorShape(input.sizes().begin(), input.sizes().end()))));
  }
}

// Queues one operation and returns its handle; on a local error the handle is dropped
// and the error thrown.
int Submit(Request request, const at::Tensor& input, const at::Tensor& output) {
  auto runtime = RequireRuntime();
  const std::string op_name = OpTypeName(request.op);
  CheckTensor(input, "input", op_name);
  ThrowIfError(ToHordeType(input.scalar_type(), &request.dtype));
  if (output.defined()) CheckOutputMatches(input, output, op_name);

  HandleTable& handles = Handles();
  const int handle = handles.Allocate();
  auto input_tensor = std::make_shared<TorchTensor>(input);
  request.shape = input_tensor->shape();
  request.device = input_tensor->device();

  TensorEntry entry;
  entry.input = input_tensor;
  if (output.defined()) {
    entry.output = std::make_shared<TorchTensor>(output);
    handles.SetOutput(handle, entry.output);
  } else {
    OutputAllocator allocate = TorchOutputAllocator(input);
    entry.allocate_output = [allocate, handle](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
      HORDE_RETURN_IF_ERROR(allocate(shape, out));
      Handles().SetOutput(handle, *out);
      return Status::Ok();
    };
  }
  entry.callback = [handle](const Status& status) { Handles().Complete(handle, status); };

  Status status = runtime->Enqueue(std::move(request), std::move(entry));
  if (!status.ok()) {
    std::shared_ptr<Tensor> unused;
    handles.Complete(handle, status);
    handles.WaitAndRelease(handle, &unused);
    throw Error(status);
  }
  return handle;
}

}  // namespace

void Init() { ThrowIfError(InitRuntime(mpi::MakeRuntime)); }

void Shutdown() { ShutdownRuntime(); }

bool IsInitialized() {
  auto runtime = CurrentRuntime();
  return runtime && !runtime->stopped();
}

Topology CurrentTopology() { return RequireRuntime()->topology(); }

RuntimeStats Stats() { return RequireRuntime()->stats(); }

bool MpiThreadsSupported() {
  RequireRuntime();
  return mpi::MpiThreadsSupported();
}

int AllreduceAsync(const at::Tensor& input, const at::Tensor& output, const std::string& name,
                   ReduceOp op, double prescale, double postscale) {
  Request request;
  request.op = OpType::kAllreduce;
  request.name = name;
  request.reduce_op = op;
  request.prescale = prescale;
  request.postscale = postscale;
  return Submit(std::move(request), input, output);
}

int AllgatherAsync(const at::Tensor& input, const std::string& name) {
  Request request;
  request.op = OpType::kAllgather;
  request.name = name;
  return Submit(std::move(request), input, at::Tensor());
}

int BroadcastAsync(const at::Tensor& input, const at::Tensor& output, int root_rank,
                   const std::string& name) {
  Request request;
  request.op = OpType::kBroadcast;
  request.name = name;
  request.root = root_rank;
  return Submit(std::move(request), input, output);
}

bool Poll(int handle) {
  bool done = false;
  ThrowIfError(Handles().Poll(handle, &done));
  return done;
}

at::Tensor Synchronize(int handle) {
  std::shared_ptr<Tensor> output;
  ThrowIfError(Handles().WaitAndRelease(handle, &output));
  return static_cast<TorchTensor*>(output.get())->tensor();
}

}  // namespace torch_ops
}  // namespace horde
