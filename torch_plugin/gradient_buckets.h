#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace horde {
namespace torch_ops {

// Gradients laid out as views into flat, persistent buffers ("buckets"), as
// DistributedDataParallel's gradient_as_bucket_view does: backward accumulates each
// gradient straight into its slice of a bucket, and a bucket whose gradients are all
// ready is reduced with one allreduce in place, with no copy into a fusion buffer and
// none back out.
//
// Buckets hold parameters in reverse order (backward produces the last layers'
// gradients first, so the first bucket fills first), one dtype and device each, up to a
// byte cap. Not thread-safe: the owner locks.
class GradientBuckets {
 public:
  struct Bucket {
    at::Tensor buffer;
    std::vector<size_t> params;  // indices into the parameters, in the buffer's order
    std::vector<at::Tensor> views;
    std::string name;  // its allreduce's: after its first parameter
    size_t ready = 0;  // parameters whose gradients are complete this step
  };

  // `names[i]`: the name params[i]'s own allreduce would have.
  GradientBuckets(const std::vector<at::Tensor>& params, const std::vector<std::string>& names,
                  int64_t cap_bytes);

  // Records that gradient `param` is complete (pointing its .grad at its view again if
  // something replaced it); returns its bucket when that completes the bucket, else null.
  Bucket* MarkReady(size_t param);
  // Parameters whose gradients were not marked ready this step.
  std::vector<size_t> Waiting() const;
  void NewStep();
  // Zeros every bucket and points every gradient at its view.
  void Zero();
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  // Points params[i].grad at its view again, keeping any values a replacement had.
  void Attach(size_t param);

  std::vector<at::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> place_;  // per parameter: bucket, position in it
  std::vector<bool> ready_;                       // per parameter, this step
};

}  // namespace torch_ops
}  // namespace horde
