#pragma once

#include <cstdint>

#include "core/response.h"

namespace horde {

// What turns a reduced sum into a response's result: Average divides by `divisor` (the
// ranks), exactly for integers (truncating toward zero, as `(sum / size).to(dtype)`
// does, never a multiplication by 1/size, which makes 49 * (1/49) < 1), and then every
// op multiplies by `factor`, the response's postscale. Floating types fold the two into
// one multiplication by factor / divisor.
struct Postscale {
  double factor = 1.0;
  int64_t divisor = 1;

  bool identity() const { return factor == 1.0 && divisor == 1; }
};

// The postscale of `response` reduced over `size` ranks.
Postscale PostscaleOf(const Response& response, int size);

}  // namespace horde
