// Test data on the host: random values exactly representable in a storage type (fp16, bf16 or
// fp32) with the bytes the device reads, and device bytes decoded back to floats. No CUDA.
// Include after support/dnngraph.hpp (it names DataType).
#pragma once

#include "support/host_types.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

namespace dnngraph::test {

// Values as a reference sees them and the bytes the device reads, in memory order.
struct HostTensor {
  std::vector<float> values;
  std::vector<std::byte> bytes;
};

// count values uniform in [-1, 1], rounded to `type` (Half, BFloat16 or Float).
inline HostTensor random_tensor(DataType type, std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  HostTensor t;
  t.values.reserve(count);
  t.bytes.resize(count * static_cast<std::size_t>(size_of(type)));
  for (std::size_t i = 0; i < count; ++i) {
    const float drawn = dist(rng);
    if (type == DataType::Half || type == DataType::BFloat16) {
      const std::uint16_t bits =
          type == DataType::Half ? float_to_half(drawn) : float_to_bfloat16(drawn);
      t.values.push_back(type == DataType::Half ? half_to_float(bits) : bfloat16_to_float(bits));
      std::memcpy(t.bytes.data() + i * sizeof bits, &bits, sizeof bits);
    } else {
      t.values.push_back(drawn);
      std::memcpy(t.bytes.data() + i * sizeof drawn, &drawn, sizeof drawn);
    }
  }
  return t;
}

// Device bytes of `type` (Half, BFloat16 or Float) as floats, in memory order.
inline std::vector<float> decode(DataType type, std::span<const std::byte> bytes) {
  std::vector<float> values;
  if (type == DataType::Half || type == DataType::BFloat16) {
    values.resize(bytes.size() / sizeof(std::uint16_t));
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * sizeof bits, sizeof bits);
      values[i] = type == DataType::Half ? half_to_float(bits) : bfloat16_to_float(bits);
    }
  } else {
    values.resize(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  }
  return values;
}

}  // namespace dnngraph::test
