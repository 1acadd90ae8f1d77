#include "tests/cpp/allocation_probe.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> g_probing{false};
std::atomic<size_t> g_largest{0};
std::atomic<size_t> g_count{0};

}  // namespace

// Replacements for the global allocation functions; the array and nothrow forms
// forward to these in libstdc++.
void* operator new(size_t size) {
  if (g_probing.load(std::memory_order_relaxed)) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    size_t seen = g_largest.load(std::memory_order_relaxed);
    while (size > seen && !g_largest.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace horde {
namespace testing {

size_t LargestAllocationDuring(const std::function<void()>& fn) {
  g_largest = 0;
  g_probing = true;
  fn();
  g_probing = false;
  return g_largest.load();
}

size_t AllocationsDuring(const std::function<void()>& fn) {
  g_count = 0;
  g_probing = true;
  fn();
  g_probing = false;
  return g_count.load();
}

}  // namespace testing
}  // namespace horde
