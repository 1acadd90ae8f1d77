// horde.torch._ops: the thin binding between Python and torch_plugin. Argument
// conversion, GIL release while waiting, and exception translation; no logic.
#include <torch/extension.h>

#include <string>
#include <utility>

#include "gpu_ops/gpu_ops.h"
#include "torch_plugin/torch_ops.h"

namespace py = pybind11;
using namespace horde;

void BindGradientReducer(py::module_& m);  // gradient_reducer_module.cc
void BindParameterShards(py::module_& m);  // parameter_shards_module.cc

namespace {

// Local misuse becomes ValueError, what is not supported NotImplementedError (Horovod's
// class for it); everything else horde.common.exceptions' HordeInternalError, as Horovod
// users expect.
void TranslateError(const Error& e) {
  if (e.status().code() == StatusCode::kInvalidArgument) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return;
  }
  if (e.status().code() == StatusCode::kUnimplemented) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
    return;
  }
  py::object error_type = py::module_::import("horde.common.exceptions").attr("HordeInternalError");
  py::object error = error_type(e.what());
  if (e.status().agreed()) error.attr("failed_on_every_rank") = true;
  PyErr_SetObject(error_type.ptr(), error.ptr());
}

// One field of a struct as a dict entry: its key and the member it reads.
template <typename Struct, typename Value>
std::pair<const char*, Value Struct::*> Field(const char* key, Value Struct::*member) {
  return {key, member};
}

// The named fields of `value` as a dict: how every struct crosses to Python.
template <typename Struct, typename... Values>
py::dict FieldsDict(const Struct& value,
                    const std::pair<const char*, Values Struct::*>&... fields) {
  py::dict out;
  ((out[fields.first] = value.*(fields.second)), ...);
  return out;
}

// What Horovod's synchronize returns: the output; a list of them for a grouped
// operation; (output, received_splits) for an alltoall. The wait runs without the GIL.
py::object Synchronize(HandleId handle) {
  torch_ops::OperationResult result;
  {
    py::gil_scoped_release no_gil;
    result = torch_ops::WaitOperation(handle);
  }
  if (result.grouped) return py::cast(result.outputs);
  if (result.received_splits.defined()) {
    return py::make_tuple(result.outputs.at(0), result.received_splits);
  }
  return py::cast(result.outputs.at(0));
}

// The straggler report as hvd.straggler_report() returns it: "straggler" is the rank
// the others wait for, or None; the rest describe the rank last most often (None before
// the first window, or when no rank was last).
py::dict StragglerDict() {
  const StragglerReport r = torch_ops::Straggler();
  py::dict out;
  out["straggler"] = r.straggler >= 0 ? py::cast(r.straggler) : py::none();
  out["most_often_last"] = r.most_often_last >= 0 ? py::cast(r.most_often_last) : py::none();
  out["host"] = r.most_often_last >= 0 ? py::cast(r.host) : py::none();
  out["share_last"] = r.share_last;
  out["lag_median_ms"] = r.lag_median_ms;
  out["lag_p90_ms"] = r.lag_p90_ms;
  out["cost_to_others"] = r.cost_to_others;
  out["rounds"] = r.rounds;
  out["window_seconds"] = r.window_seconds;
  return out;
}

py::dict StatsDict() {
  using S = RuntimeStats;
  const S stats = torch_ops::Stats();
  py::dict out = FieldsDict(
      stats, Field("negotiation_rounds", &S::negotiation_rounds),
      Field("slow_rounds", &S::slow_rounds), Field("cache_hits", &S::cache_hits),
      Field("fusion_threshold_bytes", &S::fusion_threshold_bytes),
      Field("cycle_time_ms", &S::cycle_time_ms), Field("cache_enabled", &S::cache_enabled),
      Field("autotune_settled", &S::autotune_settled),
      Field("responses_executed", &S::responses_executed),
      Field("error_responses", &S::error_responses), Field("fused_responses", &S::fused_responses),
      Field("fused_tensors", &S::fused_tensors));
  for (int op = 0; op < kNumOpTypes; ++op) {
    std::string name = OpTypeName(static_cast<OpType>(op));
    out[py::str(name + "_tensors")] = stats.tensors[op];
    out[py::str(name + "_bytes")] = stats.bytes[op];
  }
  return out;
}

py::dict TopologyDict() {
  using T = Topology;
  return FieldsDict(torch_ops::CurrentTopology(), Field("rank", &T::rank), Field("size", &T::size),
                    Field("local_rank", &T::local_rank), Field("local_size", &T::local_size),
                    Field("cross_rank", &T::cross_rank), Field("cross_size", &T::cross_size),
                    Field("is_homogeneous", &T::homogeneous));
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

  m.def("init", &torch_ops::Init, py::arg("process_sets"),
        py::call_guard<py::gil_scoped_release>());
  m.def("shutdown", &torch_ops::Shutdown, py::call_guard<py::gil_scoped_release>());
  m.def("add_process_set", &torch_ops::AddProcessSet, py::arg("ranks"),
        py::call_guard<py::gil_scoped_release>());
  m.def("remove_process_set", &torch_ops::RemoveProcessSet, py::arg("process_set_id"),
        py::call_guard<py::gil_scoped_release>());
  m.def("abort", &torch_ops::Abort, py::arg("failure"), py::call_guard<py::gil_scoped_release>());
  m.def("survives_rank_failures", &torch_ops::SurvivesRankFailures);
  m.def("recover_in_place", &torch_ops::RecoverInPlace, py::call_guard<py::gil_scoped_release>());
  m.def("is_initialized", &torch_ops::IsInitialized);
  m.def("topology", &TopologyDict);
  m.def("runtime_stats", &StatsDict);
  m.def("straggler_report", &StragglerDict);
  m.def("mpi_threads_supported", &torch_ops::MpiThreadsSupported);
  m.def("gpu_built", &gpu::GpuOpsBuilt);
  m.def("nccl_version_built", &gpu::NcclVersionBuilt);
  m.def("start_timeline", &torch_ops::StartTimeline, py::arg("file_path"), py::arg("mark_cycles"),
        py::call_guard<py::gil_scoped_release>());
  m.def("stop_timeline", &torch_ops::StopTimeline, py::call_guard<py::gil_scoped_release>());

  m.def("allreduce_async", &torch_ops::AllreduceAsync, py::arg("input"), py::arg("output"),
        py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set") = 0);
  m.def("allreduce_async_", &torch_ops::AllreduceInPlaceAsync, py::arg("tensor"), py::arg("name"),
        py::arg("op"), py::arg("prescale"), py::arg("postscale"), py::arg("process_set") = 0);
  m.def(
      "allgather_async",
      [](const at::Tensor& input, const std::string& name, int32_t process_set) {
        return torch_ops::AllgatherAsync(input, name, process_set);
      },
      py::arg("input"), py::arg("name"), py::arg("process_set") = 0);
  m.def("broadcast_async", &torch_ops::BroadcastAsync, py::arg("input"), py::arg("output"),
        py::arg("root_rank"), py::arg("name"), py::arg("process_set") = 0);
  m.def("broadcast_async_", &torch_ops::BroadcastInPlaceAsync, py::arg("tensor"),
        py::arg("root_rank"), py::arg("name"), py::arg("process_set") = 0);
  m.def("grouped_allreduce_async", &torch_ops::GroupedAllreduceAsync, py::arg("inputs"),
        py::arg("outputs"), py::arg("name"), py::arg("op"), py::arg("prescale"),
        py::arg("postscale"), py::arg("process_set") = 0);
  m.def("grouped_allreduce_async_", &torch_ops::GroupedAllreduceInPlaceAsync, py::arg("tensors"),
        py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set") = 0);
  m.def("grouped_allgather_async", &torch_ops::GroupedAllgatherAsync, py::arg("inputs"),
        py::arg("name"), py::arg("process_set") = 0);
  m.def("alltoall_async", &torch_ops::AlltoallAsync, py::arg("input"), py::arg("splits"),
        py::arg("received_splits"), py::arg("name"), py::arg("process_set") = 0);
  m.def(
      "reducescatter_async",
      [](const at::Tensor& input, const std::string& name, ReduceOp op, double prescale,
         double postscale, int32_t process_set) {
        return torch_ops::ReducescatterAsync(input, name, op, prescale, postscale, process_set);
      },
      py::arg("input"), py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set") = 0);
  m.def("grouped_reducescatter_async", &torch_ops::GroupedReducescatterAsync, py::arg("inputs"),
        py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set") = 0);
  m.def("barrier_async", &torch_ops::BarrierAsync, py::arg("process_set") = 0);
  m.def("join_async", &torch_ops::JoinAsync, py::arg("last_joined_rank"), py::arg("device") = -1);
  m.def("poll", &torch_ops::Poll, py::arg("handle"));
  m.def("release", &torch_ops::Release, py::arg("handle"));
  m.def("operation_count", &torch_ops::OperationCount);
  m.def("synchronize", &Synchronize, py::arg("handle"));
  BindGradientReducer(m);
  BindParameterShards(m);
}
