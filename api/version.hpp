// cuDNN as the API reports it: which libcudnn this process uses and why, its version, and what it
// offers. dnngraph opens libcudnn.so.9 at run time (never linked), so one build serves every
// cuDNN 9 from cudnn_minimum_version() on, each at its own capabilities: ask cudnn_offers(), not
// a version number. Defined in version.cpp, so this header needs no cuDNN header.
#pragma once

#include "api/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dnngraph {

// cudnnGetVersion() of the loaded library, e.g. 91900; 0 where none can be loaded. The first call
// that needs cuDNN loads it, searching in this order: set_cudnn_library(), DNNGRAPH_CUDNN_LIB (a
// file or a folder holding libcudnn.so.9), a libcudnn already loaded in the process (torch's),
// the nvidia-cudnn-cu13/-cu12 wheel of the running Python (the Python package), then the system's
// dynamic loader (LD_LIBRARY_PATH, ld.so.cache).
[[nodiscard]] std::int64_t cudnn_runtime_version();
// The file the loaded libcudnn came from; "" where none can be loaded.
[[nodiscard]] std::string cudnn_library_path();
// Why that file was taken ("already loaded in this process", "DNNGRAPH_CUDNN_LIB", ...), or
// where none could be loaded, every place looked at and why each failed.
[[nodiscard]] std::string cudnn_library_source();
// Use this libcudnn (a file, or a folder holding libcudnn.so.9): before the first call that needs
// cuDNN. InvalidState afterwards, unless it names the library already loaded.
[[nodiscard]] Result<void> set_cudnn_library(const std::string& path);

// A libcudnn file to try after a library already loaded in the process and before the system's
// loader, with why ("the nvidia-cudnn-cu13 wheel of this Python"): for an embedding such as the
// Python package. Ignored once a library was searched for.
void add_cudnn_search_candidate(std::string path, std::string reason);

// The oldest cuDNN dnngraph runs on (Handle::create refuses an older one), e.g. 91900.
[[nodiscard]] std::int64_t cudnn_minimum_version() noexcept;
// The cuDNN headers this binary was compiled against, e.g. 91900: for information only; what the
// library can do depends on the loaded cuDNN alone.
[[nodiscard]] std::int64_t cudnn_compiled_version() noexcept;
// "9.19.0" for 91900.
[[nodiscard]] std::string cudnn_version_string(std::int64_t version);

// Capabilities that arrived with a cuDNN version after the minimum, or that tests and callers
// branch on; each answered by the loaded library.
enum class CudnnCapability : std::uint8_t {
  VariantPackOverrides,        // execute-time override shapes in the variant pack (9.18)
  OverrideShapeFlag,           // set_override_shape_enabled graphs run their overrides (9.21)
  WorkspaceSizeWithOverrides,  // get_workspace_size with override shapes, natively (9.23)
  KernelCacheCounters,         // the kernel cache's own revision and entry count (9.27)
  SdpaBackwardAccumulator,     // attention backward zeroes its own dQ accumulator (9.6)
  ConcatOperation,             // the concatenate node (9.7)
  SliceOperation,              // the slice node (9.22)
  AdaptiveLayerNorm,           // adalayernorm forward and backward (9.9)
  PagedCacheLoad,              // attention over a paged K/V cache (9.5)
  Fp8Attention,                // Graph::sdpa_fp8, FP8 attention forward on Hopper (9.1)
  SdpaBiasGradientAnyLength,   // attention dBias with padding or lengths not multiples of 64 (9.5)
  SdpaSlidingWindowCombined,   // a sliding window together with a bias or dropout (9.10.2)
  Fp8AttentionBackward,        // Graph::sdpa_fp8_backward, FP8 attention backward on Hopper (9.7)
};
[[nodiscard]] std::string_view to_string(CudnnCapability capability) noexcept;
// Whether the loaded cuDNN offers it (false where none can be loaded).
[[nodiscard]] bool cudnn_offers(CudnnCapability capability);
// The cuDNN version that brought it, e.g. 92100.
[[nodiscard]] std::int64_t cudnn_version_needed(CudnnCapability capability) noexcept;

}  // namespace dnngraph
