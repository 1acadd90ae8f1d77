#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>

namespace horde {
namespace torch_ops {

// What DistributedOptimizer sends in place of a gradient, and how it restores the
// reduced result (Horovod's Compression). `slot` numbers the gradient (its parameter's
// place among the optimizer's trainable parameters), so that a compressor can keep
// per-gradient context between the two calls.
class GradientCompressor {
 public:
  virtual ~GradientCompressor() = default;
  // The tensor to reduce for `gradient` (may be `gradient` itself).
  virtual at::Tensor Compress(size_t slot, const at::Tensor& gradient) = 0;
  // The gradient's new value from `reduced`, the reduction of what Compress returned.
  virtual at::Tensor Decompress(size_t slot, const at::Tensor& reduced,
                                const at::Tensor& gradient) = 0;
};

// Compression.fp16: floating-point gradients travel as float16 and return in their dtype.
class Fp16Compressor : public GradientCompressor {
 public:
  at::Tensor Compress(size_t slot, const at::Tensor& gradient) override;
  at::Tensor Decompress(size_t slot, const at::Tensor& reduced,
                        const at::Tensor& gradient) override;
};

}  // namespace torch_ops
}  // namespace horde
