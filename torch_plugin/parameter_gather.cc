#include "torch_plugin/parameter_gather.h"

#include <algorithm>
#include <utility>

#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {

ParameterGather::ParameterGather(const ParameterStorage& storage,
                                 const std::vector<at::Tensor>& params,
                                 std::vector<HandleId> handles)
    : storage_(storage), params_(params), handles_(std::move(handles)) {}

ParameterGather::~ParameterGather() {
  for (size_t b = next_; b < handles_.size(); ++b) Release(handles_[b]);
}

void ParameterGather::FinishThrough(size_t last) {
  size_t end = std::min(last + 1, handles_.size());
  for (; next_ < end; ++next_) {
    try {
      Synchronize(handles_[next_]);
      storage_.Landed(next_, params_);
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
    if (failure_) end = handles_.size();  // nothing may stay in flight: wait for all
  }
  if (failure_) std::rethrow_exception(failure_);
}

}  // namespace torch_ops
}  // namespace horde
