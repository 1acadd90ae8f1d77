#pragma once

#include <cstdint>
#include <vector>

#include "horde/data_type.h"

namespace horde {
namespace testing {

// Inputs and exact expected results of reductions (allreduce, reducescatter), so that
// every rank can compute every rank's contribution and the result on its own.

// The reduce ops the MPI path supports for `dtype` in an allreduce: every op but
// Adasum, less Average for bool (which has no mean).
std::vector<ReduceOp> AllreduceOpsFor(DataType dtype);

// Element `index` of `rank`'s input to a reduction by `op` in `dtype`. The values keep
// every result over up to 4 ranks (after a prescale of 2) inside the dtype, and every
// partial sum exact in bfloat16, so no result depends on rounding or overflow (but for
// uint8 Min/Max prescaled by 2, which saturate at 255 by design):
//   - Sum, Average, Min, Max: -11..11 (halves added for floating types); uint8 Min/Max
//     use 100..232, so a signed comparison of uint8 would show;
//   - Product: +-1 and +-2, never more than 2^4 in magnitude over 4 ranks;
//   - bool: bit `rank` of the index, so the indices run through every combination.
double ReductionInput(DataType dtype, ReduceOp op, int rank, int64_t index);

// The result of reducing ReductionInput(dtype, op, r, index) over ranks r < size as
// horde defines it: each input times `prescale`, reduced, Average divided by the size,
// times `postscale`. Integers truncate toward zero after every scaling and after the
// division (as torch's casts do) and saturate at the dtype's range; floating types
// divide and postscale in one multiplication, in float32 for the types narrower than
// float64: compare with RoundedTo() of the value returned.
double ExpectedReduction(DataType dtype, ReduceOp op, int size, int64_t index,
                         double prescale = 1.0, double postscale = 1.0);

// `value` as `dtype` stores it (float16/bfloat16 and float32 round to nearest).
double RoundedTo(DataType dtype, double value);

}  // namespace testing
}  // namespace horde
