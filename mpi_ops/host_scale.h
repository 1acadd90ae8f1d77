#pragma once

#include <cstdint>

#include "horde/data_type.h"
#include "mpi_ops/postscale.h"

namespace horde {

// data[i] *= factor for `count` elements of `dtype` in host memory. Integers are
// scaled in double precision, truncated toward zero (as torch's cast does) and clamped
// to the dtype's range (NaN becomes 0), so no factor makes the conversion undefined;
// float16/bfloat16 go through float32. Bool is never scaled (rejected at submit).
void ScaleHostBuffer(void* data, int64_t count, DataType dtype, double factor);

// Applies `postscale` (see mpi_ops/postscale.h) to `count` reduced elements.
void PostscaleHostBuffer(void* data, int64_t count, DataType dtype, const Postscale& postscale);

}  // namespace horde
