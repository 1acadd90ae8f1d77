#pragma once

#include <array>
#include <cstdint>

#include "horde/data_type.h"

namespace horde {

// The identity element of a reduction: what a joined rank contributes to an allreduce
// so that the result is the other ranks' alone. Zero for Sum and Average (and any
// other op that adds, such as Adasum), one for Product, the dtype's largest value for
// Min and its lowest for Max: +inf and -inf for floating types, so that an infinite
// value elsewhere still wins; for bool (where Sum and Max are or, Min and Product and),
// false and true accordingly.
struct IdentityElement {
  std::array<uint8_t, 8> bytes{};  // one element as it lies in memory (little-endian)
  int64_t size = 0;                // bytes of the element

  bool zero() const;
};

IdentityElement IdentityOf(DataType dtype, ReduceOp op);

// Fills `count` elements of host memory at `data` with `identity`.
void FillHost(void* data, int64_t count, const IdentityElement& identity);

}  // namespace horde
