// horde from C++, through the public <horde/torch.h> API a LibTorch training loop uses.
// Loaded by the Python harness with ctypes: it shares the process's horde runtime (the
// one hvd.init() started), so the timed loop below measures the C++ API and the runtime
// with no Python in the loop.
#include <ATen/ops/from_blob.h>
#include <horde/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

// A view of the caller's memory; no copy.
at::Tensor View(float* data, int64_t count) {
  return at::from_blob(data, {count}, at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

extern "C" {

// `iters` blocking in-place allreduces of one buffer, unnamed (numbered by horde: each
// call is new to its response cache, as in Horovod) or, with a non-empty `name`, named
// (every call after the first is a cache hit).
void horde_cpp_allreduce_loop(float* data, int64_t count, int iters, const char* name) {
  at::Tensor tensor = View(data, count);
  const horde::torch::AllreduceOptions options(horde::Sum, name);
  for (int i = 0; i < iters; ++i) horde::torch::allreduce_(tensor, options);
}

// A gradient set submitted asynchronously, one named operation per tensor, then waited
// for, as DistributedOptimizer does.
void horde_cpp_allreduce_set(float** tensors, const int64_t* counts, int n) {
  std::vector<horde::torch::Handle> handles;
  handles.reserve(n);
  for (int i = 0; i < n; ++i) {
    handles.push_back(horde::torch::allreduce_async_(View(tensors[i], counts[i]),
                                                     {horde::Sum, "set." + std::to_string(i)}));
  }
  for (auto& handle : handles) handle.wait();
}

}  // extern "C"
