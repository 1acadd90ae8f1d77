// horde.torch._ops.GradientReducer: DistributedOptimizer's gradient path
// (torch_plugin/gradient_reducer.h) for Python, with Python compressors and Horovod's
// AssertionError from backward.
#include <torch/csrc/Exceptions.h>
#include <torch/extension.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "torch_plugin/gradient_reducer.h"

namespace py = pybind11;
using namespace horde;

namespace {

// A Python Compressor (compress(tensor) -> (tensor, ctx); decompress(tensor, ctx)),
// holding each gradient's ctx between the two calls.
class PythonCompressor : public torch_ops::GradientCompressor {
 public:
  explicit PythonCompressor(py::object compressor) : compressor_(std::move(compressor)) {}
  ~PythonCompressor() override {
    py::gil_scoped_acquire gil;
    contexts_.clear();
    compressor_ = py::object();
  }

  at::Tensor Compress(size_t slot, const at::Tensor& gradient) override {
    py::gil_scoped_acquire gil;
    py::tuple result = compressor_.attr("compress")(gradient);
    contexts_[slot] = result[1];
    return result[0].cast<at::Tensor>();
  }

  at::Tensor Decompress(size_t slot, const at::Tensor& reduced, const at::Tensor&) override {
    py::gil_scoped_acquire gil;
    py::object context = std::move(contexts_[slot]);
    return compressor_.attr("decompress")(reduced, context).cast<at::Tensor>();
  }

 private:
  py::object compressor_;
  std::unordered_map<size_t, py::object> contexts_;
};

// Raises `message` as Python's AssertionError out of backward(), as Horovod's hook does:
// torch's engine passes a python_error thrown in a hook on to the caller unchanged.
[[noreturn]] void RaiseAssertionError(const std::string& message) {
  py::gil_scoped_acquire gil;
  PyErr_SetString(PyExc_AssertionError, message.c_str());
  python_error error;
  error.persist();
  throw error;
}

std::unique_ptr<torch_ops::GradientReducer> MakeReducer(
    std::vector<at::Tensor> params, std::vector<std::string> names, ReduceOp op,
    double gradient_predivide_factor, int backward_passes_per_step, int32_t process_set,
    std::vector<std::vector<size_t>> groups, int num_groups, bool sparse_as_dense,
    int64_t bucket_cap_bytes, bool fp16, py::object compressor) {
  torch_ops::GradientReducerOptions options;
  options.op = op;
  options.gradient_predivide_factor = gradient_predivide_factor;
  options.backward_passes_per_step = backward_passes_per_step;
  options.process_set = process_set;
  options.groups = std::move(groups);
  options.num_groups = num_groups;
  options.sparse_as_dense = sparse_as_dense;
  options.bucket_cap_bytes = bucket_cap_bytes;
  if (fp16) {
    options.compressor = std::make_shared<torch_ops::Fp16Compressor>();
  } else if (!compressor.is_none()) {
    options.compressor = std::make_shared<PythonCompressor>(std::move(compressor));
  }
  options.raise_extra_backward_pass = RaiseAssertionError;
  return std::make_unique<torch_ops::GradientReducer>(std::move(params), std::move(names),
                                                      std::move(options));
}

// Each bucket's buffer and its parameters' indices (for tests and inspection).
py::list Buckets(const torch_ops::GradientReducer& reducer) {
  py::list out;
  if (reducer.buckets() == nullptr) return out;
  for (const auto& bucket : reducer.buckets()->buckets()) {
    out.append(py::make_tuple(bucket.buffer, bucket.params));
  }
  return out;
}

}  // namespace

void BindGradientReducer(py::module_& m) {
  py::class_<torch_ops::GradientReducer>(m, "GradientReducer")
      .def(py::init(&MakeReducer), py::arg("params"), py::arg("names"), py::arg("op"),
           py::arg("gradient_predivide_factor"), py::arg("backward_passes_per_step"),
           py::arg("process_set"), py::arg("groups"), py::arg("num_groups"),
           py::arg("sparse_as_dense"), py::arg("bucket_cap_bytes"), py::arg("fp16"),
           py::arg("compressor"))
      .def("synchronize", &torch_ops::GradientReducer::Synchronize,
           py::call_guard<py::gil_scoped_release>())
      .def("has_pending_work", &torch_ops::GradientReducer::HasPendingWork)
      .def("abandon_step", &torch_ops::GradientReducer::AbandonStep,
           py::call_guard<py::gil_scoped_release>())
      .def("zero_buckets", &torch_ops::GradientReducer::ZeroBuckets)
      // Fault injection for tests of one rank's failed step.
      .def("fail_next_start", &torch_ops::GradientReducer::FailNextStart)
      .def("buckets", &Buckets);
}
