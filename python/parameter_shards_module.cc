// horde.torch._ops.ParameterShards: the sharded optimizer's core
// (torch_plugin/parameter_shards.h) for Python.
#include <torch/extension.h>

#include <map>
#include <string>
#include <vector>

#include "torch_plugin/parameter_shards.h"

namespace py = pybind11;
using namespace horde;

namespace {

std::unique_ptr<torch_ops::ParameterShards> MakeShards(
    std::vector<at::Tensor> params, std::vector<int> groups, std::vector<std::string> names,
    int stage, int backward_passes_per_step, ReduceOp op, int32_t process_set,
    int64_t bucket_cap_bytes, bool fp16, std::string name) {
  torch_ops::ParameterShardsOptions options;
  options.stage = stage;
  options.backward_passes_per_step = backward_passes_per_step;
  options.op = op;
  options.process_set = process_set;
  options.bucket_cap_bytes = bucket_cap_bytes;
  options.fp16 = fp16;
  options.name = std::move(name);
  return std::make_unique<torch_ops::ParameterShards>(std::move(params), std::move(groups), names,
                                                      std::move(options));
}

// Each bucket as (group, [(parameter, offset in it, offset in the bucket, elements)],
// padded elements), for inspection and tests.
py::list Layout(const torch_ops::ParameterShards& shards) {
  py::list out;
  for (const ShardBucket& bucket : shards.buckets()) {
    py::list members;
    for (const auto& m : bucket.members) {
      members.append(py::make_tuple(m.tensor, m.tensor_offset, m.offset, m.numel));
    }
    out.append(py::make_tuple(bucket.group, members, bucket.numel));
  }
  return out;
}

}  // namespace

void BindParameterShards(py::module_& m) {
  py::class_<torch_ops::ParameterShards>(m, "ParameterShards")
      .def(py::init(&MakeShards), py::arg("params"), py::arg("groups"), py::arg("names"),
           py::arg("stage"), py::arg("backward_passes_per_step"), py::arg("op"),
           py::arg("process_set"), py::arg("bucket_cap_bytes"), py::arg("fp16"), py::arg("name"))
      .def("shards", &torch_ops::ParameterShards::shards)
      .def("group_of", &torch_ops::ParameterShards::group_of)
      .def("layout", &Layout)
      .def("reduce_gradients", &torch_ops::ParameterShards::ReduceGradients,
           py::call_guard<py::gil_scoped_release>())
      .def("has_pending_work", &torch_ops::ParameterShards::HasPendingWork)
      .def("clip_grad_norm", &torch_ops::ParameterShards::ClipGradNorm,
           py::call_guard<py::gil_scoped_release>())
      .def("gather_parameters", &torch_ops::ParameterShards::GatherParameters,
           py::call_guard<py::gil_scoped_release>())
      .def("start_gather", &torch_ops::ParameterShards::StartGather,
           py::call_guard<py::gil_scoped_release>())
      .def("finish_gather",
           py::overload_cast<const std::vector<size_t>&>(&torch_ops::ParameterShards::FinishGather),
           py::arg("params"), py::call_guard<py::gil_scoped_release>())
      .def("finish_gather", py::overload_cast<>(&torch_ops::ParameterShards::FinishGather),
           py::call_guard<py::gil_scoped_release>())
      .def("gathering", &torch_ops::ParameterShards::Gathering)
      .def("unshard", &torch_ops::ParameterShards::Unshard,
           py::call_guard<py::gil_scoped_release>())
      .def("shard", &torch_ops::ParameterShards::Shard)
      .def("held_buffers", &torch_ops::ParameterShards::HeldBuffers);
}
