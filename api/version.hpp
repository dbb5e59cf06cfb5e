// cuDNN versions as the API reports them (compiled against, loaded at run time).
#pragma once

#include "backend/version.hpp"

#include <cstdint>
#include <string>

namespace dnngraph {

[[nodiscard]] inline std::int64_t cudnn_compiled_version() noexcept {
  return backend::compiled_version;
}
[[nodiscard]] inline std::int64_t cudnn_runtime_version() noexcept {
  return backend::runtime_version();
}
[[nodiscard]] inline std::string cudnn_version_string(std::int64_t version) {
  return backend::version_string(version);
}

}  // namespace dnngraph
