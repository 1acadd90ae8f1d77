#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace horde {
namespace torch {

class Handle;
struct AlltoallResult;
namespace detail {
// How horde's collectives make handles; not for users.
Handle MakeHandle(int64_t id);
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
  friend Handle detail::MakeHandle(int64_t id);
  friend class AlltoallHandle;
  explicit Handle(int64_t id) : id_(id) {}
  // wait() for an alltoall: its output and received splits.
  AlltoallResult WaitAlltoall();
  void Release() noexcept;

  int64_t id_ = -1;  // 64-bit and never reused, so a job never runs out of them
};

// What alltoall returns: the rows every rank sent here, concatenated in rank order, and
// how many rows came from each rank (int32, one element per rank of the process set).
struct AlltoallResult {
  at::Tensor output;
  at::Tensor received_splits;
};

// An alltoall in flight (see alltoall_async): a Handle whose wait() also gives the
// received splits. Move-only; wait() may be called once; dropping it waits, as a
// Handle does.
class AlltoallHandle {
 public:
  AlltoallHandle() = default;
  explicit AlltoallHandle(Handle handle) : handle_(std::move(handle)) {}

  bool ready() const { return handle_.ready(); }
  // Blocks until the alltoall finishes and returns its output and received splits.
  // Throws horde::Error if it failed.
  AlltoallResult wait() { return handle_.WaitAlltoall(); }
  bool valid() const { return handle_.valid(); }

 private:
  Handle handle_;
};

}  // namespace torch
}  // namespace horde
