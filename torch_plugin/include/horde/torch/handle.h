#pragma once

#include <ATen/core/Tensor.h>

namespace horde {
namespace torch {

class Handle;
namespace detail {
// How horde's collectives make handles; not for users.
Handle MakeHandle(int id, at::Tensor in_place_target, bool copy_back);
}  // namespace detail

// An asynchronous collective in flight. Move-only; wait() may be called once.
class Handle {
 public:
  Handle() = default;
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  // Dropping a handle whose operation is in flight waits for it, discarding its result
  // and error, as a std::future from std::async does: the operation's memory is not
  // left in use behind the caller's back.
  ~Handle();

  // True once the operation has finished, successfully or not. Never blocks.
  bool ready() const;
  // Blocks until the operation finishes and returns its output: a new tensor, or for an
  // in-place operation the tensor that was passed in. Throws horde::Error if it failed.
  at::Tensor wait();
  // False for a default-constructed, moved-from or already waited-on handle.
  bool valid() const { return id_ >= 0; }

 private:
  friend Handle detail::MakeHandle(int id, at::Tensor in_place_target, bool copy_back);
  Handle(int id, at::Tensor in_place_target, bool copy_back)
      : id_(id), in_place_target_(std::move(in_place_target)), copy_back_(copy_back) {}
  void Release() noexcept;

  int id_ = -1;
  // In-place operations return the caller's tensor; when it was not contiguous the
  // operation ran on a contiguous copy that wait() copies back into it.
  at::Tensor in_place_target_;
  bool copy_back_ = false;
};

}  // namespace torch
}  // namespace horde
