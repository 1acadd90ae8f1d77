#include "horde/torch/handle.h"

#include <c10/core/GradMode.h>

#include <utility>

#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch {
namespace {

Error EmptyHandle() {
  return Error(Status::InvalidArgument(
      "this horde::torch::Handle holds no operation: it is default-constructed, moved from, "
      "or already waited on"));
}

}  // namespace

namespace detail {

Handle MakeHandle(int64_t id, at::Tensor in_place_target, bool copy_back) {
  return Handle(id, std::move(in_place_target), copy_back);
}

}  // namespace detail

Handle::Handle(Handle&& other) noexcept
    : id_(std::exchange(other.id_, -1)),
      in_place_target_(std::move(other.in_place_target_)),
      copy_back_(other.copy_back_) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Release();
    id_ = std::exchange(other.id_, -1);
    in_place_target_ = std::move(other.in_place_target_);
    copy_back_ = other.copy_back_;
  }
  return *this;
}

Handle::~Handle() { Release(); }

void Handle::Release() noexcept {
  if (!valid()) return;
  try {
    wait();
  } catch (...) {
    // Whoever dropped the handle gave up on the result, and so on its error.
  }
}

bool Handle::ready() const {
  if (!valid()) throw EmptyHandle();
  return torch_ops::Poll(id_);
}

at::Tensor Handle::wait() {
  if (!valid()) throw EmptyHandle();
  const int64_t id = std::exchange(id_, -1);
  at::Tensor target = std::move(in_place_target_);
  at::Tensor output = torch_ops::Synchronize(id);
  if (!target.defined()) return output;
  if (copy_back_) {
    c10::NoGradGuard no_grad;
    target.copy_(output);
  }
  return target;
}

}  // namespace torch
}  // namespace horde
