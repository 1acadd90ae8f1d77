#include "horde/torch/handle.h"

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

Handle MakeHandle(int64_t id) { return Handle(id); }

}  // namespace detail

Handle::Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Release();
    id_ = std::exchange(other.id_, -1);
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
  // In-place operations' copy-back happens there, shared with Python.
  return torch_ops::Synchronize(std::exchange(id_, -1));
}

AlltoallResult Handle::WaitAlltoall() {
  if (!valid()) throw EmptyHandle();
  torch_ops::OperationResult result = torch_ops::WaitOperation(std::exchange(id_, -1));
  return {std::move(result.outputs.at(0)), std::move(result.received_splits)};
}

}  // namespace torch
}  // namespace horde
