#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/completion_counter.h"
#include "horde/status.h"

namespace horde {

// What runs once a submitted operation has ended: a function of its status, or a
// count-down of a CompletionCounter under the submitter's tag. The count-down allocates
// nothing per operation (a std::function holding more than two plain words would), which
// is what DistributedOptimizer's path, with one operation per gradient, uses.
class Completion {
 public:
  Completion() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Completion> &&
                                                    std::is_invocable_v<F&, const Status&>>>
  Completion(F function) : function_(std::move(function)) {}  // NOLINT: implicit, as a callback
  Completion(std::shared_ptr<CompletionCounter> counter, size_t tag)
      : counter_(std::move(counter)), tag_(tag) {}

  void operator()(const Status& status) const {
    if (counter_) {
      counter_->Complete(tag_, status);
    } else if (function_) {
      function_(status);
    }
  }

 private:
  std::function<void(const Status&)> function_;
  std::shared_ptr<CompletionCounter> counter_;
  size_t tag_ = 0;
};

}  // namespace horde
