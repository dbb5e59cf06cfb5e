// What build() and execute() run with and report: Handle, KernelCache, PlanInfo,
// LoweringSummary, and the cuDNN version functions. Every call that can wait (cudnnCreate, the
// kernel cache's mutex, which a building thread holds) runs with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"
#include "buffers.hpp"
#include "errors.hpp"

#include <cuda_runtime_api.h>  // cudaStream_t

#include <cstdint>
#include <string>
#include <string_view>

namespace nb = nanobind;
using namespace nb::literals;

namespace dnngraph::python {

namespace {

// A CUDA stream given as an int (cudaStream_t's address, 0 the default stream), as an object
// with .cuda_stream (torch.cuda.Stream) or with __cuda_stream__() (the CUDA stream protocol:
// (version, address)).
cudaStream_t stream_from(nb::handle stream) {
  nb::object address = nb::borrow(stream);
  if (nb::hasattr(stream, "cuda_stream")) {
    address = stream.attr("cuda_stream");
  } else if (nb::hasattr(stream, "__cuda_stream__")) {
    const nb::object pair = stream.attr("__cuda_stream__")();
    address = pair[1];
  }
  if (!PyLong_Check(address.ptr())) {
    raise(ErrorCode::InvalidAttribute,
          "stream: expected an int (a cudaStream_t), a torch.cuda.Stream or an object with "
          "__cuda_stream__, given a " +
              std::string(Py_TYPE(stream.ptr())->tp_name));
  }
  return static_cast<cudaStream_t>(device_pointer(address, "stream"));
}

// Result<T> of a call made without the GIL, unwrapped with it.
template <class F>
auto without_gil(F&& call) {
  auto result = [&] {
    nb::gil_scoped_release release;
    return call();
  }();
  return unwrap(std::move(result));
}

void bind_handle(nb::module_& m) {
  nb::class_<Handle>(m, "Handle",
                     "A cuDNN handle (cudnnCreate) that graphs are built and executed with,\n"
                     "optionally bound to a CUDA stream. Use one handle per thread.")
      .def(
          "__init__",
          [](Handle* self, nb::handle stream) {
            Handle handle = without_gil([] { return Handle::create(); });
            if (!stream.is_none()) {
              unwrap(handle.set_stream(stream_from(stream)));
            }
            new (self) Handle(std::move(handle));
          },
          "stream"_a = nb::none(),
          "Creates a cuDNN handle (raises dnngraph.Error with code CudnnFailure where there is\n"
          "no CUDA device). stream: an int (cudaStream_t), e.g.\n"
          "torch.cuda.current_stream().cuda_stream, or a torch.cuda.Stream.")
      .def_static(
          "empty", [] { return Handle(); },
          "A handle without a cuDNN handle: build() and execute() with it raise InvalidHandle.")
      .def(
          "set_stream",
          [](Handle& self, nb::handle stream) { unwrap(self.set_stream(stream_from(stream))); },
          "stream"_a, "Work of this handle goes to stream from now on.")
      .def("is_empty", &Handle::empty)
      .def_prop_ro(
          "native", [](const Handle& h) { return reinterpret_cast<std::uintptr_t>(h.native()); },
          "The cudnnHandle_t as an int (0 when empty).");
}

void bind_kernel_cache(nb::module_& m) {
  using K = KernelCache;
  nb::class_<K>(
      m, "KernelCache",
      "Compiled kernels of dynamic-shape graphs, shared by graphs of one topology and by\n"
      "threads (every method takes the cache's mutex; the GIL is released meanwhile).")
      .def(nb::init<>())
      .def("is_built",
           [](const K& k) { return without_gil([&] { return Result<bool>(k.is_built()); }); })
      .def(
          "revision", [](const K& k) { return without_gil([&] { return k.revision(); }); },
          "One more for each entry inserted, replaced or removed; lookups never count. 0 after\n"
          "the first build, restarts at from_json(). Raises InvalidState before build.")
      .def(
          "size", [](const K& k) { return without_gil([&] { return k.size(); }); },
          "Number of entries the cache holds. Raises InvalidState before build.")
      .def(
          "to_json", [](const K& k) { return without_gil([&] { return k.to_json(); }); },
          "The cache as cuDNN serializes it. Below cuDNN 9.27 cuDNN serializes a cache once:\n"
          "after the cache gained entries since the first to_json() this raises VersionTooOld.")
      .def(
          "from_json",
          [](K& k, std::string_view json) { without_gil([&] { return k.from_json(json); }); },
          "json"_a,
          "Loads a to_json() document into a cache not built or loaded yet. Checked completely\n"
          "first; every refusal raises InvalidJson and leaves the cache as it was.")
      .def("descriptors_created",
           [](const K& k) {
             return without_gil([&] { return Result<std::int64_t>(k.descriptors_created()); });
           })
      .def_ro_static("max_json_bytes", &K::max_json_bytes,
                     "The largest document from_json() and the store read.")
      .def_static(
          "introspection_path", [] { return std::string(K::introspection_path()); },
          "\"native\" (cuDNN >= 9.27 counts) or \"library\" (dnngraph counts insertions).");
}

void bind_reports(nb::module_& m) {
  nb::class_<PlanInfo>(m, "PlanInfo", "What build() chose: the engine, its knobs, the workspace.")
      .def_ro("mode", &PlanInfo::mode)
      .def_ro("engine_id", &PlanInfo::engine_id)
      .def_ro("knobs", &PlanInfo::knobs, "(cudnnBackendKnobType_t, value) pairs.")
      .def_ro("workspace_size", &PlanInfo::workspace_size)
      .def_ro("candidates_tried", &PlanInfo::candidates_tried)
      .def_ro("from_cached_config", &PlanInfo::from_cached_config)
      .def_ro("kernel_cache_hit", &PlanInfo::kernel_cache_hit)
      .def_ro("heuristics_queries", &PlanInfo::heuristics_queries,
              "Heuristics queries the build made: one per mode ranked, 0 for a pinned config, a "
              "kernel cache's known config or a deserialized plan.")
      .def_ro("deserialized", &PlanInfo::deserialized, "The plan came from Graph.deserialize().")
      .def_ro("plan_from_document", &PlanInfo::plan_from_document,
              "Deserialized from cuDNN's plan document (else the engine config, finalized again).")
      .def_ro("override_path", &PlanInfo::override_path)
      .def_ro("override_workspace_path", &PlanInfo::override_workspace_path)
      .def_ro("numerical_notes", &PlanInfo::numerical_notes)
      .def_ro("behavior_notes", &PlanInfo::behavior_notes)
      .def_ro("plan_count", &PlanInfo::plan_count,
              "Candidates after the policy's filters; -1 when none were ranked.")
      .def_ro("plan_index", &PlanInfo::plan_index, "The chosen one's index among them, or -1.")
      .def("choice", &PlanInfo::choice, "The engine and knobs, to pin with PlanPolicy.engine.")
      .def("describe", &PlanInfo::describe)
      .def("__repr__",
           [](const PlanInfo& p) { return "<dnngraph.PlanInfo " + p.describe() + ">"; });

  nb::class_<EngineChoice>(m, "EngineChoice",
                           "An engine config by value: engine id and (knob type, value) pairs.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](EngineChoice* self, std::int64_t engine_id, KnobChoices knobs) {
            new (self) EngineChoice{engine_id, std::move(knobs)};
          },
          "engine_id"_a, "knobs"_a = KnobChoices{})
      .def_rw("engine_id", &EngineChoice::engine_id)
      .def_rw("knobs", &EngineChoice::knobs)
      .def("__eq__", [](const EngineChoice& a, const EngineChoice& b) { return a == b; })
      .def("__str__", [](const EngineChoice& c) { return to_string(c); })
      .def("__repr__",
           [](const EngineChoice& c) { return "<dnngraph.EngineChoice " + to_string(c) + ">"; });

  nb::class_<AutotuneRow>(m, "AutotuneRow", "One candidate of Graph.autotune.")
      .def_ro("plan_index", &AutotuneRow::plan_index)
      .def_ro("choice", &AutotuneRow::choice)
      .def_ro("workspace_size", &AutotuneRow::workspace_size)
      .def_ro("median_ms", &AutotuneRow::median_ms, "Median GPU time, or None when not timed.")
      .def_ro("skipped", &AutotuneRow::skipped, "Why it was not timed; empty when it was.");
  nb::class_<AutotuneReport>(m, "AutotuneReport", "What Graph.autotune measured and kept.")
      .def_ro("rows", &AutotuneReport::rows)
      .def_ro("chosen_index", &AutotuneReport::chosen_index)
      .def("speedup_over_first", &AutotuneReport::speedup_over_first,
           "The first candidate's median over the chosen one's (None when not timed).")
      .def("describe", &AutotuneReport::describe);
  m.def(
      "parse_engine_choice",
      [](std::string_view text) { return unwrap(parse_engine_choice(text)); }, "text"_a,
      "Reads \"engine 7, knobs {KERNEL_CFG=22}\" (str(EngineChoice), or the start of\n"
      "PlanInfo.describe()).");

  nb::class_<PlanPolicy>(m, "PlanPolicy",
                         "What build() may choose (filters) and how (first, by index, pinned).")
      .def(nb::init<>())
      .def_rw("excluded_numerical_notes", &PlanPolicy::excluded_numerical_notes)
      .def_rw("excluded_behavior_notes", &PlanPolicy::excluded_behavior_notes)
      .def_rw("excluded_engines", &PlanPolicy::excluded_engines)
      .def_rw("max_workspace", &PlanPolicy::max_workspace, "Bytes, or None.")
      .def_rw("deterministic", &PlanPolicy::deterministic)
      .def_rw("plan_index", &PlanPolicy::plan_index, "Build this candidate, or None.")
      .def_rw("engine", &PlanPolicy::engine, "Build this EngineChoice, or None.");

  nb::class_<LoweringSummary>(m, "LoweringSummary", "What lower() made (no GPU needed).")
      .def_ro("tensor_count", &LoweringSummary::tensor_count)
      .def_ro("operation_count", &LoweringSummary::operation_count)
      .def_ro("all_finalized", &LoweringSummary::all_finalized)
      .def_ro("operations", &LoweringSummary::operations)
      .def_ro("backend_operations", &LoweringSummary::backend_operations)
      .def("__repr__", [](const LoweringSummary& s) {
        return "<dnngraph.LoweringSummary " + std::to_string(s.tensor_count) + " tensors, " +
               std::to_string(s.operation_count) + " operations>";
      });
}

// Step 3 of the search for libcudnn.so.9 (api/version.hpp): the nvidia-cudnn-cu13/-cu12 wheel of
// the running Python, as pip installs it (site-packages/nvidia/cudnn/lib). Found without
// importing it; nothing is added where there is none.
void add_wheel_candidates() {
  try {
    const nb::object spec =
        nb::module_::import_("importlib.util").attr("find_spec")("nvidia.cudnn");
    if (spec.is_none() || spec.attr("submodule_search_locations").is_none()) {
      return;
    }
    for (nb::handle folder : spec.attr("submodule_search_locations")) {
      const std::string root = nb::cast<std::string>(nb::str(folder));
      add_cudnn_search_candidate(root + "/lib/libcudnn.so.9",
                                 "the nvidia-cudnn wheel of this Python (" + root + ")");
    }
  } catch (const nb::python_error&) {
    // No `nvidia` package at all: the system's loader is asked instead.
  }
}

}  // namespace

void bind_runtime(nb::module_& m) {
  add_wheel_candidates();
  bind_handle(m);
  bind_kernel_cache(m);
  bind_reports(m);
  m.def("cudnn_compiled_version", &cudnn_compiled_version,
        "The cuDNN headers dnngraph was compiled against, e.g. 91900 (for information: what it\n"
        "can do depends on the loaded cuDNN alone; see cudnn_offers).");
  m.def(
      "cudnn_runtime_version", &cudnn_runtime_version,
      "The cuDNN version loaded in this process (cudnnGetVersion); 0 where none can be loaded.\n"
      "The first call that needs cuDNN loads it: set_cudnn_library(), DNNGRAPH_CUDNN_LIB, a\n"
      "libcudnn already loaded (torch's), this Python's nvidia-cudnn wheel, the system's loader.");
  m.def("cudnn_library_path", &cudnn_library_path,
        "The file the loaded libcudnn came from (\"\" where none can be loaded).");
  m.def("cudnn_library_source", &cudnn_library_source,
        "Why that libcudnn was taken, or where none could be, every place looked at.");
  m.def(
      "set_cudnn_library",
      [](const std::string& path) {
        if (auto ok = set_cudnn_library(path); !ok) {
          raise(ok.error());
        }
      },
      "path"_a,
      "Use this libcudnn (a file, or a folder holding libcudnn.so.9); before the first call\n"
      "that needs cuDNN.");
  m.def("cudnn_minimum_version", &cudnn_minimum_version,
        "The oldest cuDNN dnngraph runs on, e.g. 91900.");
  m.def("cudnn_offers", &cudnn_offers, "capability"_a,
        "Whether the loaded cuDNN offers a CudnnCapability (False where none can be loaded).");
  m.def("cudnn_version_needed", &cudnn_version_needed, "capability"_a,
        "The cuDNN version that brought a CudnnCapability, e.g. 92100.");
  m.def("cudnn_version_string", &cudnn_version_string, "version"_a, "91900 -> \"9.19.0\".");
  m.def("size_of", &size_of, "data_type"_a, "Bytes per element (fp8 types: 1).");
  m.def("arity", &arity, "mode"_a, "Number of inputs a pointwise mode takes: 1, 2 or 3.");
  m.def("alibi_slopes", &alibi_slopes, "heads"_a,
        "The standard ALiBi slopes of `heads` query heads (what sdpa's alibi_slopes= tensor,\n"
        "Float [1, heads, 1, 1] in device memory, holds).");
}

}  // namespace dnngraph::python
