#pragma once

#include <cstddef>
#include <functional>

namespace horde {
namespace testing {

// The size of the largest single heap allocation `fn` made. The test executable
// replaces the global operator new to measure this, so a decoder can be shown to reject
// a huge length prefix before it allocates for it. Not thread-aware: call it while no
// other thread allocates.
size_t LargestAllocationDuring(const std::function<void()>& fn);
// How many heap allocations (operator new) every thread of the process made while `fn`
// ran: for measuring what a steady-state path allocates.
size_t AllocationsDuring(const std::function<void()>& fn);

}  // namespace testing
}  // namespace horde
