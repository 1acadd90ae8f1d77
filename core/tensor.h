#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/completion.h"
#include "core/ready_event.h"
#include "core/tensor_shape.h"
#include "horde/data_type.h"
#include "horde/status.h"

namespace horde {

// Device id of host memory; GPU devices are numbered from 0.
constexpr int32_t kCpuDevice = -1;
std::string DeviceName(int32_t device);

int64_t NumElements(const TensorShape& shape);
// One row along the first dimension: all but the first dimension (a scalar is one row
// of itself, as gathers and splits treat it).
TensorShape RowShape(const TensorShape& shape);
std::string ShapeString(const TensorShape& shape);

// What the runtime needs of a framework tensor: its type, shape, place and memory.
// Adapters (torch_plugin's TorchTensor, the tests' HostTensor) implement it.
class Tensor {
 public:
  virtual ~Tensor() = default;
  virtual DataType dtype() const = 0;
  virtual TensorShape shape() const = 0;
  virtual int32_t device() const = 0;
  virtual void* data() = 0;
  // NumElements(shape()); adapters that know it without building the shape say so, for
  // the per-tensor paths that ask for sizes.
  virtual int64_t num_elements() const { return NumElements(shape()); }
  int64_t size_bytes() const { return num_elements() * DataTypeSize(dtype()); }
  int64_t row_bytes() const { return NumElements(RowShape(shape())) * DataTypeSize(dtype()); }
};

// Creates an output tensor whose shape is known only after negotiation (allgather).
using OutputAllocator =
    std::function<Status(const TensorShape& shape, std::shared_ptr<Tensor>* output)>;

using StatusCallback = std::function<void(const Status&)>;

// One submitted operation as the executing rank holds it.
struct TensorEntry {
  std::string name;
  std::shared_ptr<Tensor> input;
  std::shared_ptr<Tensor> output;  // == input for in-place ops; set by the allocator for allgather
  OutputAllocator allocate_output;
  Completion callback;
  // Alltoall only: the rows of the input sent to each rank, in rank order, and (if set)
  // an int32 tensor with one element per rank that receives the rows each rank sent here.
  std::vector<int64_t> splits;
  std::shared_ptr<Tensor> received_splits;
  // GPU tensors: when the input's values are final on the device (null: already final,
  // or nobody recorded it; the GPU ops then order after the device's legacy stream).
  std::shared_ptr<ReadyEvent> ready_event;
  // When this rank submitted it (stamped by the runtime): how long it then waited for the
  // other ranks is what the straggler report compares (core/straggler_watch.h).
  std::chrono::steady_clock::time_point submitted{};
};

// Ends an entry: lets go of its tensors, then runs its callback with `status`. Every
// completion goes through here, so a caller that learns its operation is done also
// knows the runtime no longer holds its tensors (a caller reusing its tensor views,
// CountedAllreduce, relies on this; so does freeing memory on zero_grad()).
void CompleteEntry(TensorEntry& entry, const Status& status);

}  // namespace horde
