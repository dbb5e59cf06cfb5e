// dnngraph's cuDNN queries over backend/library, backend/version and backend/features.
#include "api/version.hpp"

#include "api/types.hpp"
#include "backend/features.hpp"
#include "backend/library.hpp"
#include "backend/version.hpp"
#include "detail/cudnn/version_check.hpp"

#include <cstddef>
#include <utility>

namespace dnngraph {

namespace {

// CudnnCapability is the public face of backend::Feature: the same capabilities in the same
// order, so a capability's index is its feature's, and its name is the feature table's key
// (features_test checks both ways). Null past the table's end.
const backend::FeatureEntry* feature_entry(CudnnCapability capability) noexcept {
  const auto i = static_cast<std::size_t>(capability);
  const auto table = backend::features();
  return i < table.size() ? &table[i] : nullptr;
}

}  // namespace

std::int64_t cudnn_runtime_version() { return backend::runtime_version(); }

std::string cudnn_library_path() { return backend::library_path(); }

std::string cudnn_library_source() { return backend::library_source(); }

Result<void> set_cudnn_library(const std::string& path) {
  if (path.empty()) {
    return make_error(ErrorCode::InvalidAttribute, "set_cudnn_library: the path is empty");
  }
  if (auto ok = backend::choose_library(path); !ok) {
    return make_error(ErrorCode::InvalidState, ok.error().context + ": " + ok.error().last_error);
  }
  return {};
}

void add_cudnn_search_candidate(std::string path, std::string reason) {
  backend::add_library_candidate(std::move(path), std::move(reason));
}

std::int64_t cudnn_minimum_version() noexcept { return backend::minimum_supported_version; }

std::int64_t cudnn_compiled_version() noexcept { return backend::compiled_version; }

std::string cudnn_version_string(std::int64_t version) { return backend::version_string(version); }

std::string_view to_string(CudnnCapability capability) noexcept {
  const backend::FeatureEntry* e = feature_entry(capability);
  return e != nullptr ? e->key : unknown_enumerator;
}

bool cudnn_offers(CudnnCapability capability) {
  const backend::FeatureEntry* e = feature_entry(capability);
  return e != nullptr && backend::available(e->feature);
}

std::int64_t cudnn_version_needed(CudnnCapability capability) noexcept {
  const backend::FeatureEntry* e = feature_entry(capability);
  return e != nullptr ? e->minimum : 0;
}

namespace detail {

Result<void> check_loaded_cudnn(std::int64_t minimum, std::int64_t loaded,
                                std::string_view library_path, std::string_view source) {
  if (loaded >= minimum) {
    return {};
  }
  const std::string where =
      library_path.empty() ? std::string("an unknown path") : std::string(library_path);
  return make_error(ErrorCode::VersionTooOld,
                    "create a cuDNN handle: the loaded cuDNN is " +
                        backend::version_string(loaded) + " (" + where + ", " +
                        std::string(source) + "), and dnngraph needs cuDNN " +
                        backend::version_string(minimum) +
                        " or newer; name a newer one with DNNGRAPH_CUDNN_LIB or "
                        "set_cudnn_library() (pip install nvidia-cudnn-cu13 brings one)");
}

}  // namespace detail
}  // namespace dnngraph
