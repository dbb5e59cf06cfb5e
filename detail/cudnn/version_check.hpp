// The check Handle::create makes of the loaded cuDNN against the oldest dnngraph supports
// (internal to api/), apart so that a CPU test can give it any pair of versions.
#pragma once

#include "api/error.hpp"

#include <cstdint>
#include <string_view>

namespace dnngraph::detail {

// VersionTooOld when `loaded` is older than `minimum`, naming both versions, the loaded library's
// path and why it was taken (`source`).
[[nodiscard]] Result<void> check_loaded_cudnn(std::int64_t minimum, std::int64_t loaded,
                                              std::string_view library_path,
                                              std::string_view source);

}  // namespace dnngraph::detail
