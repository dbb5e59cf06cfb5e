// bf16 matmul (+ bias, + ReLU) data for the benches that execute on the GPU and check results:
// bf16 bits, a device buffer, and one output element's reference on the CPU. Needs no dnngraph
// header, so a program that imports the module and one that includes headers both use it.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dnngraph_bench {

// Y[b, m, n] = A[b, m, k] x B[b, k, n].
struct MatmulShape {
  std::int64_t b, m, n, k;
  bool operator==(const MatmulShape&) const = default;
};

// bf16 is the top half of a float; the test values (multiples of 1/8 up to 2) are exact.
inline std::uint16_t to_bf16(float value) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(value) >> 16);
}
inline float from_bf16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// cudaMalloc'ed bytes, freed with the object; p is null when the allocation failed.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      p = nullptr;
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p); }
};

// Y[bi, i, j] of (A x B + bias) in double, then max(., 0) when `relu`; an empty `bias` adds none.
inline double matmul_reference(const MatmulShape& s, std::span<const std::uint16_t> a,
                               std::span<const std::uint16_t> b,
                               std::span<const std::uint16_t> bias, bool relu, std::int64_t bi,
                               std::int64_t i, std::int64_t j) {
  const auto at = [](std::int64_t index) { return static_cast<std::size_t>(index); };
  double ref = bias.empty() ? 0.0 : from_bf16(bias[at(j)]);
  for (std::int64_t l = 0; l < s.k; ++l) {
    ref += double(from_bf16(a[at((bi * s.m + i) * s.k + l)])) *
           from_bf16(b[at((bi * s.k + l) * s.n + j)]);
  }
  return relu ? std::max(ref, 0.0) : ref;
}

// Exact products, a float accumulator and a bf16 output: within 1% and 0.05.
inline bool close_to_reference(double got, double ref) {
  return std::abs(got - ref) <= 0.01 * std::abs(ref) + 0.05;
}

}  // namespace dnngraph_bench
