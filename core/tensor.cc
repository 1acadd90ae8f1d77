#include "core/tensor.h"

namespace horde {

TensorShape RowShape(const TensorShape& shape) {
  return shape.empty() ? TensorShape{} : TensorShape(shape.begin() + 1, shape.end());
}

int64_t NumElements(const TensorShape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const TensorShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void CompleteEntry(TensorEntry& entry, const Status& status) {
  const Completion callback = std::move(entry.callback);
  entry.input.reset();
  entry.output.reset();
  entry.received_splits.reset();
  entry.ready_event.reset();
  callback(status);
}

std::string DeviceName(int32_t device) {
  return device == kCpuDevice ? "cpu" : "cuda:" + std::to_string(device);
}

}  // namespace horde
