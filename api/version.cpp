// dnngraph's cuDNN version functions over backend/version.
#include "api/version.hpp"

#include "api/version_check.hpp"
#include "backend/version.hpp"

namespace dnngraph {

std::int64_t cudnn_compiled_version() noexcept { return backend::compiled_version; }

std::int64_t cudnn_runtime_version() noexcept { return backend::runtime_version(); }

std::string cudnn_library_path() { return backend::library_path(); }

std::string cudnn_version_string(std::int64_t version) { return backend::version_string(version); }

namespace detail {

Result<void> check_loaded_cudnn(std::int64_t compiled, std::int64_t loaded,
                                std::string_view library_path) {
  if (loaded >= compiled) {
    return {};
  }
  const std::string where =
      library_path.empty() ? std::string("an unknown path") : std::string(library_path);
  return make_error(ErrorCode::VersionTooOld,
                    "create a cuDNN handle: dnngraph was compiled against cuDNN " +
                        backend::version_string(compiled) + " and the loaded cuDNN is " +
                        backend::version_string(loaded) + " (" + where +
                        "), older than that; put the newer cuDNN first (LD_LIBRARY_PATH) or "
                        "build dnngraph against this one (CUDNN_ROOT)");
}

}  // namespace detail
}  // namespace dnngraph
