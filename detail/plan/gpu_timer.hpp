// GPU time of a piece of work on a stream, measured with CUDA events. The library links no CUDA
// runtime (only cuDNN), so the events come from the CUDA driver (libcuda.so.1, present wherever
// there is a GPU), loaded on first use: cuEventCreate, cuEventRecord, cuEventSynchronize,
// cuEventElapsedTime(_v2), cuEventDestroy_v2. Used by Graph::autotune.
#pragma once

#include "api/error.hpp"

#include <cstdint>
#include <functional>
#include <vector>

struct CUstream_st;

namespace dnngraph::detail {

// Runs `work` warmup times untimed, then `iterations` times, each between two events recorded on
// `stream`, and returns each run's GPU time in milliseconds (in order). The first error of
// `work` is returned as it is; a driver that cannot be loaded or an event call that fails is a
// CudaFailure naming the call and the driver's error. Synchronizes with the last event only.
[[nodiscard]] Result<std::vector<double>> gpu_times_ms(CUstream_st* stream, std::int64_t warmup,
                                                       std::int64_t iterations,
                                                       const std::function<Result<void>()>& work);

}  // namespace dnngraph::detail
