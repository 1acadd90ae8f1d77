#pragma once

#include <ATen/ATen.h>

#include <string>

#include "core/runtime_stats.h"
#include "core/topology.h"
#include "horde/error.h"

namespace horde {
namespace torch_ops {

// The operations frameworks call, on at::Tensors, shared by the Python extension and
// the C++ API. Failures throw horde::Error; local misuse has code kInvalidArgument.

void Init();
void Shutdown();
bool IsInitialized();
// This process's place in the job; throws if horde is not initialized.
Topology CurrentTopology();
RuntimeStats Stats();
bool MpiThreadsSupported();

// Each returns a handle at once; the operation runs on the background thread. An empty
// name lets the runtime number the operation (see Runtime::Enqueue). `output` must be
// contiguous, with the input's dtype and shape.
int AllreduceAsync(const at::Tensor& input, const at::Tensor& output, const std::string& name,
                   ReduceOp op, double prescale, double postscale);
int AllgatherAsync(const at::Tensor& input, const std::string& name);
int BroadcastAsync(const at::Tensor& input, const at::Tensor& output, int root_rank,
                   const std::string& name);

// Reduces the tensors as one unit: they are negotiated together and released only
// when every one is ready on every rank. Member i is named "<name>.<i>" (see
// Runtime::EnqueueGroup for unnamed groups).
std::vector<int> GroupedAllreduceAsync(const std::vector<at::Tensor>& inputs,
                                       const std::vector<at::Tensor>& outputs,
                                       const std::string& name, ReduceOp op, double prescale,
                                       double postscale);
// Marks this rank as out of data: until every rank has joined, other ranks' allreduces
// proceed with zeros from this one. Completes when all have joined, writing the last
// rank to join into `last_joined_rank` (an int32 tensor of one element).
int JoinAsync(const at::Tensor& last_joined_rank);

bool Poll(int handle);
// Waits for the operation and returns its output tensor.
at::Tensor Synchronize(int handle);

}  // namespace torch_ops
}  // namespace horde
