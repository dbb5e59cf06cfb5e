// dnngraph's cuDNN version functions over backend/version.
#include "api/version.hpp"

#include "backend/version.hpp"

namespace dnngraph {

std::int64_t cudnn_compiled_version() noexcept { return backend::compiled_version; }

std::int64_t cudnn_runtime_version() noexcept { return backend::runtime_version(); }

std::string cudnn_version_string(std::int64_t version) { return backend::version_string(version); }

}  // namespace dnngraph
