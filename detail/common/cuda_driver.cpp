// The CUDA driver's entry points, loaded at run time: see cuda_driver.hpp.
#include "detail/common/cuda_driver.hpp"

#include <dlfcn.h>

#include <array>
#include <utility>

namespace dnngraph::detail {

namespace {

// CUdevice_attribute values (cuda.h, stable since CUDA 2.x).
constexpr int attribute_cc_major = 75;
constexpr int attribute_cc_minor = 76;

template <class F>
bool load(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));  // NOLINT: dlsym hands back a void*
  return out != nullptr;
}

CudaDriver load_driver() {
  CudaDriver d;
  // Kept for the life of the process: the CUDA runtime cuDNN uses has it loaded anyway.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    d.missing = "the CUDA driver (libcuda.so.1) could not be loaded: " +
                std::string(why != nullptr ? why : "no reason given");
    return d;
  }
  // cuEventElapsedTime_v2 from CUDA 12.8 drivers; the first version has the same signature.
  const bool elapsed = load(library, "cuEventElapsedTime_v2", d.event_elapsed) ||
                       load(library, "cuEventElapsedTime", d.event_elapsed);
  const std::array<std::pair<const char*, bool>, 13> loaded{{
      {"cuEventCreate", load(library, "cuEventCreate", d.event_create)},
      {"cuEventRecord", load(library, "cuEventRecord", d.event_record)},
      {"cuEventSynchronize", load(library, "cuEventSynchronize", d.event_synchronize)},
      {"cuEventElapsedTime", elapsed},
      {"cuEventDestroy_v2", load(library, "cuEventDestroy_v2", d.event_destroy)},
      {"cuCtxGetCurrent", load(library, "cuCtxGetCurrent", d.ctx_get_current)},
      {"cuCtxGetDevice", load(library, "cuCtxGetDevice", d.ctx_get_device)},
      {"cuCtxPushCurrent_v2", load(library, "cuCtxPushCurrent_v2", d.ctx_push_current)},
      {"cuCtxPopCurrent_v2", load(library, "cuCtxPopCurrent_v2", d.ctx_pop_current)},
      {"cuStreamGetCtx", load(library, "cuStreamGetCtx", d.stream_get_ctx)},
      {"cuDeviceGetName", load(library, "cuDeviceGetName", d.device_get_name)},
      {"cuDeviceGetAttribute", load(library, "cuDeviceGetAttribute", d.device_get_attribute)},
      {"cuGetErrorString", load(library, "cuGetErrorString", d.error_string)},
  }};
  for (const auto& [name, found] : loaded) {
    if (!found) {
      d.missing = "the CUDA driver has no " + std::string(name);
      return d;
    }
  }
  return d;
}

// The device of the context current on this thread.
Result<CuDevice> current_device(const CudaDriver& d, std::string_view what) {
  CuDevice device = 0;
  if (const CuResult s = d.ctx_get_device(&device); s != cuda_success) {
    return std::unexpected(cuda_driver_error(what, s, "cuCtxGetDevice"));
  }
  return device;
}

// The device of `stream`'s context: made current for the question, the caller's put back.
Result<CuDevice> device_of_stream(const CudaDriver& d, CUstream_st* stream, std::string_view what) {
  CuContext context = nullptr;
  if (const CuResult s = d.stream_get_ctx(stream, &context); s != cuda_success) {
    return std::unexpected(cuda_driver_error(what, s, "cuStreamGetCtx"));
  }
  if (const CuResult s = d.ctx_push_current(context); s != cuda_success) {
    return std::unexpected(cuda_driver_error(what, s, "cuCtxPushCurrent"));
  }
  auto device = current_device(d, what);
  CuContext popped = nullptr;
  if (const CuResult s = d.ctx_pop_current(&popped); s != cuda_success && device) {
    return std::unexpected(cuda_driver_error(what, s, "cuCtxPopCurrent"));
  }
  return device;
}

}  // namespace

const CudaDriver& cuda_driver() {
  static const CudaDriver d = load_driver();  // thread-safe initialization
  return d;
}

Error cuda_driver_error(std::string_view what, CuResult status, std::string_view call) {
  const CudaDriver& d = cuda_driver();
  const char* text = nullptr;
  if (d.error_string == nullptr || d.error_string(status, &text) != cuda_success ||
      text == nullptr) {
    text = "unknown error";
  }
  return Error{ErrorCode::CudaFailure, std::string(what) + ": " + std::string(call) + " failed: " +
                                           text + " (CUresult " + std::to_string(status) + ")"};
}

std::string describe(const GpuIdentity& gpu) {
  return gpu.name + " (sm_" + std::to_string(gpu.major) + std::to_string(gpu.minor) + ")";
}

Result<CuDevice> device_of(CUstream_st* stream, std::string_view what) {
  const CudaDriver& d = cuda_driver();
  if (!d.missing.empty()) {
    return make_error(ErrorCode::CudaFailure, std::string(what) + ": " + d.missing);
  }
  if (stream != nullptr) {
    return device_of_stream(d, stream, what);
  }
  CuContext context = nullptr;
  if (const CuResult s = d.ctx_get_current(&context); s != cuda_success) {
    return std::unexpected(cuda_driver_error(what, s, "cuCtxGetCurrent"));
  }
  if (context == nullptr) {
    return make_error(ErrorCode::CudaFailure,
                      std::string(what) +
                          ": no CUDA context is current on this thread and the handle has "
                          "the default stream, so the GPU cannot be told; use CUDA on this "
                          "thread first (cudaSetDevice), or give the handle a stream");
  }
  return current_device(d, what);
}

Result<GpuIdentity> identity_of(CuDevice device, std::string_view what) {
  const CudaDriver& d = cuda_driver();
  if (!d.missing.empty()) {
    return make_error(ErrorCode::CudaFailure, std::string(what) + ": " + d.missing);
  }
  GpuIdentity gpu;
  std::array<char, 256> name{};
  if (const CuResult s = d.device_get_name(name.data(), static_cast<int>(name.size()), device);
      s != cuda_success) {
    return std::unexpected(cuda_driver_error(what, s, "cuDeviceGetName"));
  }
  gpu.name = name.data();
  for (auto [attribute, out] :
       {std::pair{attribute_cc_major, &gpu.major}, std::pair{attribute_cc_minor, &gpu.minor}}) {
    if (const CuResult s = d.device_get_attribute(out, attribute, device); s != cuda_success) {
      return std::unexpected(cuda_driver_error(what, s, "cuDeviceGetAttribute"));
    }
  }
  return gpu;
}

}  // namespace dnngraph::detail
