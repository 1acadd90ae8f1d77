// horde.torch._ops: the thin binding between Python and torch_plugin. Argument
// conversion, GIL release while waiting, and exception translation; no logic.
#include <torch/extension.h>

#include "mpi_ops/gpu_ops.h"
#include "torch_plugin/torch_ops.h"

namespace py = pybind11;
using namespace horde;

namespace {

// Local misuse becomes ValueError; everything else horde.common.exceptions'
// HordeInternalError, as Horovod users expect.
void TranslateError(const Error& e) {
  if (e.status().code() == StatusCode::kInvalidArgument) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return;
  }
  py::object error_type = py::module_::import("horde.common.exceptions").attr("HordeInternalError");
  PyErr_SetString(error_type.ptr(), e.what());
}

py::dict StatsDict() {
  RuntimeStats stats = torch_ops::Stats();
  py::dict out;
  out["negotiation_rounds"] = stats.negotiation_rounds;
  out["slow_rounds"] = stats.slow_rounds;
  out["cache_hits"] = stats.cache_hits;
  out["fusion_threshold_bytes"] = stats.fusion_threshold_bytes;
  out["cycle_time_ms"] = stats.cycle_time_ms;
  out["cache_enabled"] = stats.cache_enabled;
  out["autotune_settled"] = stats.autotune_settled;
  out["responses_executed"] = stats.responses_executed;
  out["error_responses"] = stats.error_responses;
  out["fused_responses"] = stats.fused_responses;
  out["fused_tensors"] = stats.fused_tensors;
  for (int op = 0; op < kNumOpTypes; ++op) {
    std::string name = OpTypeName(static_cast<OpType>(op));
    out[py::str(name + "_tensors")] = stats.tensors[op];
    out[py::str(name + "_bytes")] = stats.bytes[op];
  }
  return out;
}

py::dict TopologyDict() {
  Topology t = torch_ops::CurrentTopology();
  py::dict out;
  out["rank"] = t.rank;
  out["size"] = t.size;
  out["local_rank"] = t.local_rank;
  out["local_size"] = t.local_size;
  out["cross_rank"] = t.cross_rank;
  out["cross_size"] = t.cross_size;
  out["is_homogeneous"] = t.homogeneous;
  return out;
}

}  // namespace

PYBIND11_MODULE(_ops, m) {
  m.doc() = "horde's compiled operations; use horde.torch instead";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      TranslateError(e);
    }
  });

  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("Sum", ReduceOp::kSum)
      .value("Average", ReduceOp::kAverage)
      .value("Min", ReduceOp::kMin)
      .value("Max", ReduceOp::kMax)
      .value("Product", ReduceOp::kProduct)
      .value("Adasum", ReduceOp::kAdasum);

  m.def("init", &torch_ops::Init, py::arg("process_sets"), py::call_guard<py::gil_scoped_release>());
  m.def("shutdown", &torch_ops::Shutdown, py::call_guard<py::gil_scoped_release>());
  m.def("add_process_set", &torch_ops::AddProcessSet, py::arg("ranks"),
        py::call_guard<py::gil_scoped_release>());
  m.def("remove_process_set", &torch_ops::RemoveProcessSet, py::arg("process_set_id"),
        py::call_guard<py::gil_scoped_release>());
  m.def("abort", &torch_ops::Abort, py::arg("failure"), py::call_guard<py::gil_scoped_release>());
  m.def("is_initialized", &torch_ops::IsInitialized);
  m.def("topology", &TopologyDict);
  m.def("runtime_stats", &StatsDict);
  m.def("mpi_threads_supported", &torch_ops::MpiThreadsSupported);
  m.def("gpu_built", &mpi::GpuOpsBuilt);
  m.def("nccl_version_built", &mpi::NcclVersionBuilt);
  m.def("start_timeline", &torch_ops::StartTimeline, py::arg("file_path"), py::arg("mark_cycles"),
        py::call_guard<py::gil_scoped_release>());
  m.def("stop_timeline", &torch_ops::StopTimeline, py::call_guard<py::gil_scoped_release>());

  m.def("allreduce_async", &torch_ops::AllreduceAsync, py::arg("input"), py::arg("output"),
        py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set") = 0);
  m.def("allgather_async", &torch_ops::AllgatherAsync, py::arg("input"), py::arg("name"),
        py::arg("process_set") = 0);
  m.def("broadcast_async", &torch_ops::BroadcastAsync, py::arg("input"), py::arg("output"),
        py::arg("root_rank"), py::arg("name"), py::arg("process_set") = 0);
  m.def("grouped_allreduce_async", &torch_ops::GroupedAllreduceAsync, py::arg("inputs"),
        py::arg("outputs"), py::arg("name"), py::arg("op"), py::arg("prescale"),
        py::arg("postscale"), py::arg("process_set") = 0);
  m.def("grouped_allgather_async", &torch_ops::GroupedAllgatherAsync, py::arg("inputs"),
        py::arg("name"), py::arg("process_set") = 0);
  m.def("alltoall_async", &torch_ops::AlltoallAsync, py::arg("input"), py::arg("splits"),
        py::arg("received_splits"), py::arg("name"), py::arg("process_set") = 0);
  m.def("reducescatter_async", &torch_ops::ReducescatterAsync, py::arg("input"), py::arg("name"),
        py::arg("op"), py::arg("prescale"), py::arg("postscale"), py::arg("process_set") = 0);
  m.def("grouped_reducescatter_async", &torch_ops::GroupedReducescatterAsync, py::arg("inputs"),
        py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set") = 0);
  m.def("barrier_async", &torch_ops::BarrierAsync, py::arg("process_set") = 0);
  m.def("join_async", &torch_ops::JoinAsync, py::arg("last_joined_rank"), py::arg("device") = -1);
  m.def("poll", &torch_ops::Poll, py::arg("handle"));
  m.def("synchronize", &torch_ops::Synchronize, py::arg("handle"),
        py::call_guard<py::gil_scoped_release>());
}
