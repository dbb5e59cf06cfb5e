// cuDNN versions: the headers compiled against (informational: what the library can use is asked
// of the loaded library, backend/features) and the library loaded at run time (e.g. 91900 for
// 9.19.0).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

namespace dnngraph::backend {

inline constexpr std::int64_t compiled_version = CUDNN_VERSION;

// The oldest cuDNN dnngraph runs on: the oldest whose whole GPU suite was run on the H200.
inline constexpr std::int64_t minimum_supported_version = 91900;

// cudnnGetVersion() of the library loaded at run time (loading it: backend/library); 0 where
// none can be loaded. Needs no GPU.
[[nodiscard]] std::int64_t runtime_version();

// The file the loaded libcudnn came from; "" where none is loaded.
[[nodiscard]] std::string library_path();

// Why that library was taken ("already loaded in this process", ...), or, where none could be
// loaded, every place looked at and why each failed.
[[nodiscard]] std::string library_source();

// "9.19.0" for 91900.
[[nodiscard]] std::string version_string(std::int64_t version);

}  // namespace dnngraph::backend
