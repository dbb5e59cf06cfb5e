// The CUDA driver (libcuda.so.1), loaded at run time on first use: the library links no CUDA
// runtime (only cuDNN, which carries its own), so what it asks the GPU directly (autotune's
// events, the device a serialized plan was made on) goes through the driver's C entry points,
// looked up by name. Without the header: its macros rename the entry points by API version.
#pragma once

#include "api/error.hpp"

#include <string>
#include <string_view>

struct CUstream_st;

namespace dnngraph::detail {

using CuResult = int;  // CUresult: an int-sized enum
using CuEvent = void*;
using CuContext = void*;
using CuDevice = int;
inline constexpr CuResult cuda_success = 0;

struct CudaDriver {
  CuResult (*event_create)(CuEvent*, unsigned int) = nullptr;
  CuResult (*event_record)(CuEvent, CUstream_st*) = nullptr;
  CuResult (*event_synchronize)(CuEvent) = nullptr;
  CuResult (*event_elapsed)(float*, CuEvent, CuEvent) = nullptr;
  CuResult (*event_destroy)(CuEvent) = nullptr;
  CuResult (*ctx_get_current)(CuContext*) = nullptr;
  CuResult (*ctx_get_device)(CuDevice*) = nullptr;
  CuResult (*ctx_push_current)(CuContext) = nullptr;
  CuResult (*ctx_pop_current)(CuContext*) = nullptr;
  CuResult (*stream_get_ctx)(CUstream_st*, CuContext*) = nullptr;
  CuResult (*device_get_name)(char*, int, CuDevice) = nullptr;
  CuResult (*device_get_attribute)(int*, int, CuDevice) = nullptr;
  CuResult (*error_string)(CuResult, const char**) = nullptr;
  std::string missing;  // why the driver cannot be used; empty when it can
};

// The driver's entry points, loaded once (thread-safe); `missing` says why when they are not.
[[nodiscard]] const CudaDriver& cuda_driver();

// "<what>: <call> failed: <the driver's text> (CUresult N)", a CudaFailure.
[[nodiscard]] Error cuda_driver_error(std::string_view what, CuResult status,
                                      std::string_view call);

// The GPU a stream's work runs on: its product name and compute capability.
struct GpuIdentity {
  std::string name;  // cuDeviceGetName, e.g. "NVIDIA H200"
  int major = 0;     // compute capability
  int minor = 0;
  friend bool operator==(const GpuIdentity&, const GpuIdentity&) = default;
};

// "NVIDIA H200 (sm_90)"
[[nodiscard]] std::string describe(const GpuIdentity& gpu);

// The device ordinal of `stream`'s context (a non-null stream), else of the context current on
// this thread: a few driver calls, cheap enough for every build. A CudaFailure naming `what`
// when the driver cannot say: no driver, or neither a stream nor a current context (this thread
// has not used CUDA yet).
[[nodiscard]] Result<CuDevice> device_of(CUstream_st* stream, std::string_view what);

// The name and compute capability of a device ordinal.
[[nodiscard]] Result<GpuIdentity> identity_of(CuDevice device, std::string_view what);

}  // namespace dnngraph::detail
