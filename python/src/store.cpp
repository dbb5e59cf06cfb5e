// KernelCacheStore and the log level from Python: the store's file work runs with the GIL
// released. (The log's callback sink is C++ only: it is called on whatever thread logged.)
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"
#include "errors.hpp"

#include <cstdint>
#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace dnngraph::python {

void bind_store(nb::module_& m) {
  nb::enum_<LogLevel>(m, "LogLevel", "DNNGRAPH_LOG's levels: Off, Info, Debug.")
      .value("Off", LogLevel::Off)
      .value("Info", LogLevel::Info)
      .value("Debug", LogLevel::Debug);
  m.def("set_log_level", &set_log_level, "level"_a,
        "Overrides DNNGRAPH_LOG; lines go to DNNGRAPH_LOG_FILE (stderr by default).");
  m.def("log_level", &log_level);

  nb::class_<StoredKernelCache>(m, "StoredKernelCache",
                                "What KernelCacheStore.load_or_create gives: the cache, its file, "
                                "whether it was loaded,\nand why a file there could not serve.")
      .def_ro("cache", &StoredKernelCache::cache)
      .def_ro("path", &StoredKernelCache::path)
      .def_ro("loaded", &StoredKernelCache::loaded)
      .def_ro("warning", &StoredKernelCache::warning);

  using S = KernelCacheStore;
  nb::class_<S>(m, "KernelCacheStore",
                "Kernel caches kept in a folder across processes, one file per topology, cuDNN\n"
                "version and GPU architecture, replaced atomically under a lock (see\n"
                "docs/kernel-cache.md).")
      .def(nb::init<std::filesystem::path>(), "folder"_a)
      .def_prop_ro("folder", &S::folder)
      .def(
          "load_or_create",
          [](S& s, const std::string& topology, const std::string& gpu_architecture,
             std::int64_t cudnn_version) {
            auto stored = [&] {
              nb::gil_scoped_release release;
              return s.load_or_create({topology, gpu_architecture, cudnn_version});
            }();
            return unwrap(std::move(stored));
          },
          "topology"_a, "gpu_architecture"_a, "cudnn_version"_a = 0,
          "The stored cache, loaded (not built), or a new one; a damaged file is set aside and\n"
          "named in .warning.")
      .def(
          "save_if_changed",
          [](S& s, const KernelCache& cache) {
            auto saved = [&] {
              nb::gil_scoped_release release;
              return s.save_if_changed(cache);
            }();
            return unwrap(std::move(saved));
          },
          "cache"_a, "Writes the cache when its revision moved since load or the last save.");
}

}  // namespace dnngraph::python
