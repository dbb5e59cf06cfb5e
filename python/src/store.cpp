// KernelCacheStore and the log level from Python: the store's file work runs with the GIL
// released. (The log's callback sink is C++ only: it is called on whatever thread logged.) Two
// private helpers serve `python -m dnngraph.cache` as the library serves dnngraph-cache: the
// document check of from_json without loading, and the store's folder lock.
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/cache/store_files.hpp"
#include "errors.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace nb = nanobind;
using namespace nb::literals;

namespace dnngraph::python {

namespace {

// The store's folder lock, held from construction until release() or the end of a `with` block.
class HeldFolderLock {
 public:
  explicit HeldFolderLock(detail::FolderLock lock) : lock_(std::move(lock)) {}
  void release() { lock_.reset(); }

 private:
  std::optional<detail::FolderLock> lock_;
};

void bind_cache_command_helpers(nb::module_& m) {
  m.def(
      "_check_cache_document",
      [](std::string_view json) {
        auto checked = [&] {
          nb::gil_scoped_release release;
          return detail::check_cache_document(json);
        }();
        return unwrap(std::move(checked)).entries;
      },
      "json"_a,
      "The number of entries of a kernel cache document that passes from_json's checks (not\n"
      "cuDNN's parse); raises InvalidJson naming what is wrong.");
  nb::class_<HeldFolderLock>(m, "_FolderLock",
                             "The store's advisory lock on a folder, as its writers take it.")
      .def(
          "__init__",
          [](HeldFolderLock* self, const std::filesystem::path& folder, double patience_seconds) {
            auto lock = [&] {
              nb::gil_scoped_release release;
              return detail::FolderLock::acquire(
                  folder,
                  std::chrono::milliseconds(static_cast<std::int64_t>(patience_seconds * 1000.0)));
            }();
            new (self) HeldFolderLock(unwrap(std::move(lock)));
          },
          "folder"_a, "patience_seconds"_a,
          "Takes the lock, trying for patience_seconds; raises IoFailure after that.")
      .def("release", &HeldFolderLock::release)
      .def(
          "__enter__", [](HeldFolderLock& self) -> HeldFolderLock& { return self; },
          nb::rv_policy::reference)
      .def("__exit__", [](HeldFolderLock& self, nb::args) { self.release(); });
}

}  // namespace

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

  nb::class_<KernelCacheKey>(m, "KernelCacheKey",
                             "What a stored cache is for: the topology's name, the GPU\n"
                             "architecture and the cuDNN version (0: the one loaded).")
      .def_ro("topology", &KernelCacheKey::topology)
      .def_ro("gpu_architecture", &KernelCacheKey::gpu_architecture)
      .def_ro("cudnn_version", &KernelCacheKey::cudnn_version)
      .def("__repr__", [](const KernelCacheKey& k) {
        return "<dnngraph.KernelCacheKey " + k.topology + " cuDNN " +
               cudnn_version_string(k.cudnn_version) + " " + k.gpu_architecture + ">";
      });

  nb::class_<StoredFile>(m, "StoredFile", "One file of a store's folder, as list() sees it.")
      .def_ro("path", &StoredFile::path)
      .def_ro("key", &StoredFile::key)
      .def_ro("bytes", &StoredFile::bytes);

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
          "cache"_a, "Writes the cache when its revision moved since load or the last save.")
      .def(
          "list",
          [](const S& s) {
            auto files = [&] {
              nb::gil_scoped_release release;
              return s.list();
            }();
            return unwrap(std::move(files));
          },
          "The store's files in the folder (not the damaged ones, temporaries or the lock), by\n"
          "name.")
      .def_static(
          "default_folder", [] { return unwrap(S::default_folder()); },
          "$DNNGRAPH_CACHE_DIR, else $XDG_CACHE_HOME/dnngraph, else ~/.cache/dnngraph.")
      .def_static("key_of", &S::key_of, "file_name"_a,
                  "The key a file name stands for; None for a name the store did not make.")
      .def_prop_ro_static("file_suffix", [](nb::handle) { return std::string(S::file_suffix); })
      .def_prop_ro_static("damaged_suffix",
                          [](nb::handle) { return std::string(S::damaged_suffix); });

  bind_cache_command_helpers(m);
}

}  // namespace dnngraph::python
