// cuDNN versions: the one we compiled against and the one loaded at run time (e.g. 91900
// for 9.19.0).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

namespace dnngraph::backend {

inline constexpr std::int64_t compiled_version = CUDNN_VERSION;

// cudnnGetVersion() of the library loaded at run time; needs no GPU.
[[nodiscard]] std::int64_t runtime_version() noexcept;

// The file the loaded libcudnn came from (dladdr on cudnnGetVersion; the loaded objects' list
// when that names another object); "" when neither says.
[[nodiscard]] std::string library_path();

// "9.19.0" for 91900.
[[nodiscard]] std::string version_string(std::int64_t version);

}  // namespace dnngraph::backend
