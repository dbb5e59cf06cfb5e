// cuDNN versions as the API reports them (compiled against, loaded at run time). Defined in
// version.cpp, so this header needs no cuDNN header: the compiled version is the one the library
// was built with.
#pragma once

#include <cstdint>
#include <string>

namespace dnngraph {

[[nodiscard]] std::int64_t cudnn_compiled_version() noexcept;
[[nodiscard]] std::int64_t cudnn_runtime_version() noexcept;
// The path of the libcudnn loaded in this process (as the dynamic loader opened it), so a user
// can see which of several installed cuDNNs runs; "" if the loader does not say.
[[nodiscard]] std::string cudnn_library_path();
// "9.19.0" for 91900.
[[nodiscard]] std::string cudnn_version_string(std::int64_t version);

}  // namespace dnngraph
