#include "torch_plugin/gradient_buckets.h"

#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

namespace horde {
namespace torch_ops {

GradientBuckets::GradientBuckets(const std::vector<at::Tensor>& params,
                                 const std::vector<std::string>& names, int64_t cap_bytes)
    : params_(params), place_(params.size()), ready_(params.size(), false) {
  std::vector<size_t> current;
  int64_t used = 0;
  auto close = [&] {
    Bucket bucket;
    bucket.params = current;
    bucket.name = names[current.front()] + ".bucket";
    int64_t numel = 0;
    for (size_t i : current) numel += params[i].numel();
    const at::Tensor& first = params[current.front()];
    bucket.buffer = at::zeros({numel}, first.options());
    int64_t offset = 0;
    for (size_t i : current) {
      place_[i] = {buckets_.size(), bucket.views.size()};
      bucket.views.push_back(bucket.buffer.narrow(0, offset, params[i].numel()).view_as(params[i]));
      offset += params[i].numel();
    }
    buckets_.push_back(std::move(bucket));
    current.clear();
    used = 0;
  };
  for (size_t i = params.size(); i-- > 0;) {
    const at::Tensor& p = params[i];
    const int64_t nbytes = p.numel() * static_cast<int64_t>(p.element_size());
    if (!current.empty()) {
      const at::Tensor& first = params[current.front()];
      const bool fits = used + nbytes <= cap_bytes && p.scalar_type() == first.scalar_type() &&
                        p.device() == first.device();
      if (!fits) close();
    }
    current.push_back(i);
    used += nbytes;
  }
  if (!current.empty()) close();
  for (size_t i = 0; i < params_.size(); ++i) Attach(i);
}

void GradientBuckets::Attach(size_t param) {
  const at::Tensor& view = buckets_[place_[param].first].views[place_[param].second];
  at::Tensor& p = params_[param];
  const at::Tensor& grad = p.grad();
  if (grad.defined() && grad.data_ptr() == view.data_ptr()) return;
  c10::NoGradGuard no_grad;
  if (!grad.defined()) {
    view.zero_();
  } else {
    view.copy_(grad.is_sparse() ? grad.to_dense() : grad);
  }
  p.mutable_grad() = view;
}

GradientBuckets::Bucket* GradientBuckets::MarkReady(size_t param) {
  Attach(param);
  Bucket& bucket = buckets_[place_[param].first];
  if (ready_[param]) return nullptr;
  ready_[param] = true;
  return ++bucket.ready == bucket.params.size() ? &bucket : nullptr;
}

std::vector<size_t> GradientBuckets::Waiting() const {
  std::vector<size_t> waiting;
  for (const Bucket& bucket : buckets_) {
    for (size_t i : bucket.params) {
      if (!ready_[i]) waiting.push_back(i);
    }
  }
  return waiting;
}

void GradientBuckets::NewStep() {
  for (Bucket& bucket : buckets_) bucket.ready = 0;
  ready_.assign(ready_.size(), false);
}

void GradientBuckets::Zero() {
  for (Bucket& bucket : buckets_) bucket.buffer.zero_();
  for (size_t i = 0; i < params_.size(); ++i) Attach(i);
}

}  // namespace torch_ops
}  // namespace horde
