#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>

#include "horde/status.h"

namespace horde {

// Allocates `bytes` of host memory aligned to `alignment` (freed with std::free); null
// when it cannot. Injected so that tests can make one rank's allocations fail.
using HostAllocator = std::function<void*(size_t alignment, size_t bytes)>;
void* AlignedAllocate(size_t alignment, size_t bytes);

// A persistent, 64-byte aligned host buffer that grows to the largest size asked of it
// and is reused, so the hot path allocates nothing once warmed up.
class HostBuffer {
 public:
  explicit HostBuffer(HostAllocator allocate = AlignedAllocate) : allocate_(std::move(allocate)) {}

  // Points `data` at a buffer of at least `bytes`. An error naming the size when it
  // cannot grow that far (the buffer it had stays).
  Status Reserve(int64_t bytes, char** data);
  int64_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  HostAllocator allocate_;
  std::unique_ptr<char, Free> data_;
  int64_t capacity_ = 0;
};

}  // namespace horde
