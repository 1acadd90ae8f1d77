#include "torch_plugin/parameter_storage.h"

#include <c10/core/GradMode.h>
#include <c10/util/StringUtil.h>

#include "torch_plugin/huge_page_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

// Whether bucket b continues the storage of bucket b - 1 (same group and element type).
bool Continues(const std::vector<ShardBucket>& buckets, size_t b) {
  return b > 0 && buckets[b].group == buckets[b - 1].group &&
         buckets[b].kind == buckets[b - 1].kind;
}

}  // namespace

ParameterStorage::ParameterStorage(const std::vector<at::Tensor>& params,
                                   const std::vector<ShardBucket>& buckets,
                                   const std::vector<std::string>& names)
    : places_(params.size()), ending_in_(buckets.size()), names_(names) {
  at::NoGradGuard no_grad;
  at::Tensor storage;
  int64_t start = 0;  // bucket b's first element in `storage`
  for (size_t b = 0; b < buckets.size(); ++b) {
    const ShardBucket& bucket = buckets[b];
    if (!Continues(buckets, b)) {
      int64_t total = bucket.numel;
      for (size_t c = b + 1; c < buckets.size() && Continues(buckets, c); ++c) {
        total += buckets[c].numel;
      }
      storage = NewFlatTensor(total, params[bucket.members[0].tensor].options());
      start = 0;
    }
    buckets_.push_back(storage.narrow(0, start, bucket.numel));
    const ShardBucket::Member& last = bucket.members.back();
    const int64_t used = last.offset + last.numel;
    buckets_.back().narrow(0, used, bucket.numel - used).zero_();  // the padding
    for (const ShardBucket::Member& m : bucket.members) {
      const at::Tensor& param = params[m.tensor];
      if (m.tensor_offset == 0) {
        places_[m.tensor] = storage.narrow(0, start + m.offset, param.numel()).view(param.sizes());
      }
      if (m.tensor_offset + m.numel == param.numel()) ending_in_[b].push_back(m.tensor);
    }
    start += bucket.numel;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!places_[i].defined()) continue;  // no elements
    places_[i].copy_(params[i].detach());
    if (params[i].is_contiguous()) params[i].set_data(places_[i]);
  }
}

bool ParameterStorage::IsView(size_t i, const at::Tensor& param) const {
  return param.is_contiguous() && param.numel() == places_[i].numel() &&
         param.data_ptr() == places_[i].data_ptr();
}

std::string ParameterStorage::Sync(const std::vector<at::Tensor>& params) const {
  at::NoGradGuard no_grad;
  std::string error;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& param = params[i];
    if (!places_[i].defined() || IsView(i, param)) continue;
    if (param.sizes() != places_[i].sizes()) {
      if (error.empty()) {
        error = "parameter '" + names_[i] + "' is now shaped " + c10::str(param.sizes()) +
                ", not " + c10::str(places_[i].sizes()) +
                " as when the optimizer was made; make a new optimizer for a changed model";
      }
      continue;
    }
    places_[i].copy_(param.detach());
    if (param.is_contiguous()) param.set_data(places_[i]);
  }
  return error;
}

void ParameterStorage::Landed(size_t b, const std::vector<at::Tensor>& params) const {
  at::NoGradGuard no_grad;
  for (size_t i : ending_in_[b]) {
    const at::Tensor& param = params[i];
    if (IsView(i, param)) {
      param.unsafeGetTensorImpl()->bump_version();
    } else {
      param.detach().copy_(places_[i]);
    }
  }
}

}  // namespace torch_ops
}  // namespace horde
