#include "torch_plugin/submission.h"

#include "core/api.h"
#include "core/process_set_registry.h"
#include "horde/error.h"
#include "torch_plugin/cuda_ready_event.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

void CheckOutputMatches(const at::Tensor& input, const at::Tensor& output, const std::string& op) {
  CheckTensor(output, "output", op);
  if (output.scalar_type() != input.scalar_type() || !output.sizes().equals(input.sizes())) {
    throw Error(Status::InvalidArgument(
        op + ": the output tensor must have the input's dtype and shape; got " +
        c10::toString(output.scalar_type()) +
        ShapeString(TensorShape(output.sizes().begin(), output.sizes().end())) + " for input " +
        c10::toString(input.scalar_type()) +
        ShapeString(TensorShape(input.sizes().begin(), input.sizes().end()))));
  }
  if (output.device() != input.device()) {
    throw Error(
        Status::InvalidArgument(op + ": the output tensor must be on the input's device; got " +
                                output.device().str() + " for input on " + input.device().str()));
  }
}

Status WithMessage(const Status& status, std::string message) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return Status::InvalidArgument(std::move(message));
    case StatusCode::kPreconditionError: return Status::PreconditionError(std::move(message));
    case StatusCode::kAborted: return Status::Aborted(std::move(message));
    case StatusCode::kUnimplemented: return Status::Unimplemented(std::move(message));
    default: return Status::Internal(std::move(message));
  }
}

}  // namespace

Target RequireSet(int32_t process_set) {
  Target target;
  ThrowIfError(FindProcessSet(process_set, &target.runtime, &target.ranks));
  if (process_set != 0) {
    target.context = "process set " + std::to_string(process_set) + " (ranks " +
                     RanksString(target.ranks) + "): ";
  }
  return target;
}

std::shared_ptr<Runtime> RequireRuntime(int32_t process_set, std::string* context) {
  if (process_set != 0) {
    Target target = RequireSet(process_set);
    *context = std::move(target.context);
    return target.runtime;
  }
  std::shared_ptr<Runtime> runtime;
  ThrowIfError(FindProcessSet(0, &runtime, nullptr));
  context->clear();
  return runtime;
}

Status InContext(const Status& status, const std::string& context) {
  if (status.ok() || context.empty()) return status;
  const Status out = WithMessage(status, context + status.message());
  return status.agreed() ? out.Agreed() : out;
}

void CheckTensor(const at::Tensor& t, const char* role, const std::string& op) {
  if (!t.defined())
    throw Error(Status::InvalidArgument(op + ": the " + role + " tensor is undefined"));
  if (!t.is_contiguous()) {
    throw Error(Status::InvalidArgument(op + ": the " + role + " tensor must be contiguous"));
  }
}

void CheckLanding(const at::Tensor& input, const at::Tensor& landing, const std::string& op) {
  CheckTensor(landing, "output", op);
  if (landing.scalar_type() != input.scalar_type() || landing.device() != input.device()) {
    throw Error(Status::InvalidArgument(
        op + ": the output tensor must have the input's dtype and device; got " +
        c10::toString(landing.scalar_type()) + " on " + landing.device().str() + " for input " +
        c10::toString(input.scalar_type()) + " on " + input.device().str()));
  }
}

void BindTensors(const at::Tensor& input, const at::Tensor& output, Request* request,
                 TensorEntry* entry, std::shared_ptr<TorchTensor>* input_view) {
  const std::string op_name = OpTypeName(request->op);
  CheckTensor(input, "input", op_name);
  ThrowIfError(ToHordeType(input.scalar_type(), &request->dtype));
  if (output.defined()) CheckOutputMatches(input, output, op_name);
  std::shared_ptr<ReadyEvent> ready;
  ThrowIfError(RecordReadyEvent(input, &ready));
  std::shared_ptr<TorchTensor> made;
  std::shared_ptr<TorchTensor>& input_tensor = input_view ? *input_view : made;
  if (input_tensor) {
    input_tensor->Rebind(input);  // the caller's: no operation holds it any more
  } else {
    input_tensor = std::make_shared<TorchTensor>(input);
  }
  request->shape = input_tensor->shape();
  request->device = input_tensor->device();
  entry->input = input_tensor;
  entry->ready_event = std::move(ready);
  if (output.defined()) {
    entry->output = output.is_same(input) ? input_tensor : std::make_shared<TorchTensor>(output);
  }
}

}  // namespace torch_ops
}  // namespace horde
