#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace horde {

// A new uninitialised 1-D tensor of `numel` elements with `options`. On the CPU, from
// 2 MiB on, its memory is asked for in transparent huge pages (madvise; where the kernel
// has none, ordinary pages): its first touch then faults 2 MiB at a time, not 4 KiB, and a
// whole-model buffer made every step (a sharded optimizer's gradient buckets) costs
// milliseconds instead of a page fault per 4 KiB. Elsewhere, at::empty. Never requires grad.
at::Tensor NewFlatTensor(int64_t numel, const at::TensorOptions& options);

}  // namespace horde
