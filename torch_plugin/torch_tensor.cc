#include "torch_plugin/torch_tensor.h"

#include <ATen/ops/empty.h>

#include <exception>
#include <string>

namespace horde {

Status ToHordeType(at::ScalarType type, DataType* dtype) {
  switch (type) {
    case at::kByte: *dtype = DataType::kUInt8; return Status::Ok();
    case at::kChar: *dtype = DataType::kInt8; return Status::Ok();
    case at::kShort: *dtype = DataType::kInt16; return Status::Ok();
    case at::kInt: *dtype = DataType::kInt32; return Status::Ok();
    case at::kLong: *dtype = DataType::kInt64; return Status::Ok();
    case at::kHalf: *dtype = DataType::kFloat16; return Status::Ok();
    case at::kBFloat16: *dtype = DataType::kBFloat16; return Status::Ok();
    case at::kFloat: *dtype = DataType::kFloat32; return Status::Ok();
    case at::kDouble: *dtype = DataType::kFloat64; return Status::Ok();
    case at::kBool: *dtype = DataType::kBool; return Status::Ok();
    default:
      return Status::InvalidArgument(
          std::string("unsupported tensor dtype ") + c10::toString(type) +
          "; horde supports uint8, int8, int16, int32, int64, float16, bfloat16, float32, "
          "float64 and bool");
  }
}

DataType TorchTensor::dtype() const {
  DataType dtype = DataType::kFloat32;
  ToHordeType(tensor_.scalar_type(), &dtype);
  return dtype;
}

TensorShape TorchTensor::shape() const {
  auto sizes = tensor_.sizes();
  return TensorShape(sizes.begin(), sizes.end());
}

int32_t TorchTensor::device() const {
  return tensor_.device().is_cuda() ? static_cast<int32_t>(tensor_.device().index()) : kCpuDevice;
}

OutputAllocator TorchOutputAllocator(const at::Tensor& prototype) {
  auto options = prototype.options();
  return [options](const TensorShape& shape, std::shared_ptr<Tensor>* output) {
    try {
      *output = std::make_shared<TorchTensor>(at::empty(shape, options));
      return Status::Ok();
    } catch (const std::exception& e) {
      return Status::Internal(std::string("could not allocate the output: ") + e.what());
    }
  };
}

OutputAllocator LandingAllocator(const at::Tensor& landing) {
  return [landing](const TensorShape& shape, std::shared_ptr<Tensor>* output) {
    const TensorShape given(landing.sizes().begin(), landing.sizes().end());
    if (given != shape) {
      return Status::InvalidArgument("the output given has shape " + ShapeString(given) +
                                     "; the result has " + ShapeString(shape));
    }
    *output = std::make_shared<TorchTensor>(landing);
    return Status::Ok();
  };
}

}  // namespace horde
