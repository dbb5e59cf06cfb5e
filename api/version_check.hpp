// The check Handle::create makes of the loaded cuDNN against the one compiled against (internal
// to api/), apart so that a CPU test can give it any pair of versions.
#pragma once

#include "api/error.hpp"

#include <cstdint>
#include <string_view>

namespace dnngraph::detail {

// VersionTooOld when `loaded` is older than `compiled`, naming both versions and the loaded
// library's path.
[[nodiscard]] Result<void> check_loaded_cudnn(std::int64_t compiled, std::int64_t loaded,
                                              std::string_view library_path);

}  // namespace dnngraph::detail
