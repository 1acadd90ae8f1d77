#pragma once

#include <cstdint>

#include "core/data_type.h"

namespace horde {

// data[i] *= factor for `count` elements of `dtype` in host memory. Integers are
// scaled in double precision and truncated toward zero (as torch's cast does);
// float16/bfloat16 through float32. Bool is never scaled (rejected at submit).
void ScaleHostBuffer(void* data, int64_t count, DataType dtype, double factor);

}  // namespace horde
