#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace horde {

// A persistent, 64-byte aligned host buffer that grows to the largest size asked of it
// and is reused, so the hot path allocates nothing once warmed up.
class HostBuffer {
 public:
  char* Reserve(int64_t bytes);

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  int64_t capacity_ = 0;
};

}  // namespace horde
