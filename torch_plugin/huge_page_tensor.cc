#include "torch_plugin/huge_page_tensor.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <sys/mman.h>

#include <new>

namespace horde {
namespace {

constexpr int64_t kHugePage = int64_t{2} << 20;

}  // namespace

at::Tensor NewFlatTensor(int64_t numel, const at::TensorOptions& requested) {
  const at::TensorOptions options = requested.requires_grad(false);  // a buffer, on both paths
  const int64_t bytes = numel * static_cast<int64_t>(
                                    c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
  if (options.device().type() != at::kCPU || bytes < kHugePage) {
    return at::empty({numel}, options);
  }
  // Whole huge pages, one spare to align the start on one.
  const size_t mapped = static_cast<size_t>((bytes + 2 * kHugePage - 1) / kHugePage * kHugePage);
  void* region = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) throw std::bad_alloc();
  const auto start = (reinterpret_cast<uintptr_t>(region) + kHugePage - 1) & ~(kHugePage - 1);
  void* data = reinterpret_cast<void*>(start);
  madvise(data, static_cast<size_t>(mapped - (start - reinterpret_cast<uintptr_t>(region))),
          MADV_HUGEPAGE);  // advice: without huge pages the memory is still good
  return at::from_blob(
      data, {numel}, [region, mapped](void*) { munmap(region, mapped); }, options);
}

}  // namespace horde
