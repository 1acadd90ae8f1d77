#include "torch_plugin/gradient_compressor.h"

namespace horde {
namespace torch_ops {

at::Tensor Fp16Compressor::Compress(size_t, const at::Tensor& gradient) {
  if (!at::isFloatingType(gradient.scalar_type())) return gradient;
  return gradient.to(at::kHalf);
}

at::Tensor Fp16Compressor::Decompress(size_t, const at::Tensor& reduced,
                                      const at::Tensor& gradient) {
  return reduced.to(gradient.scalar_type());
}

}  // namespace torch_ops
}  // namespace horde
