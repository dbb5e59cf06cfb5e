// What the cudnn-frontend probes (bench/*_frontend_probe.cpp) share: a cuDNN handle on a CUDA
// device, a device buffer, the frontend's build chain under chosen heuristics modes, one execute
// with its workspace, Half/BFloat16 bits, and the worst error against a CPU reference. Only for
// programs built with cudnn-frontend's headers (dnngraph_add_frontend_probe in CMakeLists.txt).
#pragma once

#include <cudnn_frontend.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph_bench {

namespace fe = cudnn_frontend;
using Dims = std::vector<std::int64_t>;

inline bool cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("CUDA %s: %s\n", what, cudaGetErrorString(status));
    return false;
  }
  return true;
}

// A cuDNN handle on the current CUDA device, or nullptr after a line saying why (no CUDA device,
// no handle): a probe exits nonzero then, as for any setup failure.
inline cudnnHandle_t open_handle() {
  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices);
      status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "none found");
    return nullptr;
  }
  cudnnHandle_t handle = nullptr;
  if (const cudnnStatus_t status = cudnnCreate(&handle); status != CUDNN_STATUS_SUCCESS) {
    std::printf("no cuDNN handle: %s\n", cudnnGetErrorString(status));
    return nullptr;
  }
  return handle;
}

// Device memory for one probe run; freed when it goes out of scope.
struct Device {
  void* ptr = nullptr;
  explicit Device(std::size_t bytes) { cuda_ok(cudaMalloc(&ptr, bytes), "malloc"); }
  // A buffer holding a copy of host.
  template <class T>
  explicit Device(const std::vector<T>& host) : Device(host.size() * sizeof(T)) {
    cuda_ok(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy");
  }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  Device(Device&&) = delete;
  Device& operator=(Device&&) = delete;

  // The first count elements of the buffer.
  template <class T>
  std::vector<T> read(std::size_t count) const {
    std::vector<T> host(count);
    cuda_ok(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "copy");
    return host;
  }
};

inline const char* mode_name(fe::HeurMode_t mode) {
  switch (mode) {
    case fe::HeurMode_t::A: return "A";
    case fe::HeurMode_t::B: return "B";
    case fe::HeurMode_t::FALLBACK: return "Fallback";
    case fe::HeurMode_t::OPENSOURCE: return "OpenSource";
  }
  return "?";
}

struct Built {
  bool ok = false;
  std::int64_t configs = 0;  // engine configs the heuristics offered
  std::string plan;          // the chosen plan's name, once built
  std::string error;         // the frontend's message, when not built
};

// validate, the operation graph, the heuristics' engine configs under modes, the support check
// and the plans: the frontend's own build chain, stopped at the first error (or exception).
inline Built build(fe::graph::Graph& graph, cudnnHandle_t handle,
                   const std::vector<fe::HeurMode_t>& modes) {
  Built built;
  try {
    auto status = graph.validate();
    if (status.is_good()) status = graph.build_operation_graph(handle);
    if (status.is_good()) status = graph.create_execution_plans(modes);
    if (status.is_good()) built.configs = graph.get_execution_plan_count();
    if (status.is_good()) status = graph.check_support();
    if (status.is_good()) status = graph.build_plans();
    if (status.is_good()) status = graph.get_plan_name(built.plan);
    built.ok = status.is_good();
    built.error = built.ok ? "" : status.get_message();
  } catch (const std::exception& e) {
    built.ok = false;
    built.error = std::string("the frontend threw: ") + e.what();
  }
  return built;
}

// Prints "built (N engine configs offered, plan P); " to go on with, or "not built (N engine
// configs offered): why" ending the line; true when built.
inline bool print_built(const Built& built) {
  if (!built.ok) {
    std::printf("not built (%lld engine configs offered): %s\n",
                static_cast<long long>(built.configs), built.error.c_str());
    return false;
  }
  std::printf("built (%lld engine configs offered, plan %s); ",
              static_cast<long long>(built.configs), built.plan.c_str());
  return true;
}

// Execute-time override shapes: uids with their new dims and strides; empty: the build shapes.
struct Overrides {
  std::vector<std::int64_t> uids;
  std::vector<Dims> shapes, strides;
};

// Asks the workspace (with the overrides, if any), executes once and waits; "" when that all
// succeeded, else what failed and the frontend's or CUDA's message.
inline std::string execute(fe::graph::Graph& graph, cudnnHandle_t handle,
                           std::unordered_map<std::int64_t, void*>& pack,
                           const Overrides& overrides = {}) {
  const bool overridden = !overrides.uids.empty();
  std::int64_t workspace_size = 0;
  if (auto ws = overridden ? graph.get_workspace_size(handle, workspace_size, overrides.uids,
                                                      overrides.shapes, overrides.strides)
                           : graph.get_workspace_size(workspace_size);
      !ws.is_good()) {
    return "workspace: " + ws.get_message();
  }
  Device workspace(static_cast<std::size_t>(workspace_size) + 1);
  if (auto ran = overridden ? graph.execute(handle, pack, workspace.ptr, overrides.uids,
                                            overrides.shapes, overrides.strides)
                            : graph.execute(handle, pack, workspace.ptr);
      !ran.is_good()) {
    return "execute: " + ran.get_message();
  }
  if (const cudaError_t sync = cudaDeviceSynchronize(); sync != cudaSuccess) {
    return std::string("synchronize: ") + cudaGetErrorString(sync);
  }
  return "";
}

// Half or BFloat16 bits of v (rounded to nearest even), and the value of such bits. All-ones
// bits (what memset 0xFF writes) are a NaN in both types, and in Float.
inline std::uint16_t to_bits(float v, bool bf16) {
  std::uint16_t bits = 0;
  if (bf16) {
    const __nv_bfloat16 b = __float2bfloat16(v);
    std::memcpy(&bits, &b, 2);
  } else {
    const __half h = __float2half(v);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}
inline float from_bits(std::uint16_t bits, bool bf16) {
  if (bf16) {
    __nv_bfloat16 b;
    std::memcpy(&b, &bits, 2);
    return __bfloat162float(b);
  }
  __half h;
  std::memcpy(&h, &bits, 2);
  return __half2float(h);
}
inline float round_trip(float v, bool bf16) { return from_bits(to_bits(v, bf16), bf16); }

// The worst |got - want| over the elements compared; a NaN is counted apart, never as small.
struct Worst {
  std::size_t compared = 0;
  std::size_t nan = 0;
  double max_error = 0;
  void add(double got, double want) {
    ++compared;
    if (std::isnan(got) || std::isnan(want)) {
      ++nan;
    } else {
      max_error = std::max(max_error, std::abs(got - want));
    }
  }
  [[nodiscard]] bool within(double tolerance) const { return nan == 0 && max_error <= tolerance; }
};

}  // namespace dnngraph_bench
