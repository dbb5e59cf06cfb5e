// What the FP8 attention GPU tests (sdpa_fp8, sdpa_fp8_backward) share: a case's memory layout
// (packed BHSD or token-major BSHD strides, where an element lies), FP8 tensors of random values
// with their dequantized values, the FP8 graph settings and the factors' device buffers. Include
// after support/dnngraph.hpp and <boost/test/unit_test.hpp>.
#pragma once

#include "support/device_buffer.hpp"
#include "support/fp8_types.hpp"
#include "support/gpu_checks.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace dnngraph::test {

// Where the elements of a [b, h, s, d] tensor lie: packed BHSD, or BSHD (token after token).
struct Fp8Layout {
  bool bshd = false;

  [[nodiscard]] std::vector<std::int64_t> strides(const std::vector<std::int64_t>& d) const {
    return bshd ? std::vector<std::int64_t>{d[2] * d[1] * d[3], d[3], d[1] * d[3], 1}
                : dnngraph::packed_strides(d);
  }
  // An input of g with the layout's strides (of the graph's io type unless set after).
  std::shared_ptr<TensorAttributes> input(Graph& g, const char* name, std::int64_t uid,
                                          const std::vector<std::int64_t>& dims) const {
    return g.tensor(
        TensorAttributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides(dims)));
  }
  // The memory offset of the element whose index in [b, h, s, d] order is `logical`.
  [[nodiscard]] std::size_t offset(const std::vector<std::int64_t>& dims,
                                   std::size_t logical) const {
    const std::vector<std::int64_t> s = strides(dims);
    std::size_t at = 0;
    for (std::size_t i = dims.size(); i-- > 0;) {
      const auto extent = static_cast<std::size_t>(dims[i]);
      at += (logical % extent) * static_cast<std::size_t>(s[i]);
      logical /= extent;
    }
    return at;
  }
};

// Q [b, h_q, s_q, d], K and V [b, h_k, s_kv, d] of case c, inputs of g with the layout's strides
// and uids 1, 2, 3.
struct Fp8Qkv {
  std::shared_ptr<TensorAttributes> q, k, v;
};
inline Fp8Qkv qkv_inputs(Graph& g, const Fp8Layout& layout, const SdpaCase& c) {
  return {layout.input(g, "Q", 1, c.q_dims()), layout.input(g, "K", 2, c.kv_dims()),
          layout.input(g, "V", 3, c.kv_dims())};
}

// An FP8 tensor: its values dequantized, in [b, h, s, d] order, and its bytes in memory order.
struct Fp8Tensor {
  std::vector<float> real;
  std::vector<std::uint8_t> bytes;
};

// Values drawn uniformly from [-range, range] and rounded to `type`; `real` holds them times
// `descale`.
inline Fp8Tensor random_fp8(DataType type, const Fp8Layout& layout,
                            const std::vector<std::int64_t>& dims, float range, float descale,
                            std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-range, range);
  const std::size_t count = element_count(dims);
  Fp8Tensor t{std::vector<float>(count), std::vector<std::uint8_t>(count)};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t bits = fp8_bits(type, dist(rng));
    t.real[i] = fp8_value(type, bits) * descale;
    t.bytes[layout.offset(dims, i)] = bits;
  }
  return t;
}

// A graph of FP8 attention: io type Fp8E4M3, intermediates and compute Float.
inline Graph fp8_attention_graph(const std::string& name) {
  Graph g;
  g.set_name(name)
      .set_io_data_type(DataType::Fp8E4M3)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  return g;
}

// The per-tensor factors: one Float [1, 1, 1, 1] input each, named, with uids from first_uid.
inline std::vector<std::shared_ptr<TensorAttributes>> factor_inputs(
    Graph& g, std::span<const char* const> names, std::int64_t first_uid) {
  std::vector<std::shared_ptr<TensorAttributes>> factors;
  factors.reserve(names.size());
  for (const char* name : names) {
    factors.push_back(g.tensor(TensorAttributes()
                                   .set_name(name)
                                   .set_uid(first_uid++)
                                   .set_dim({1, 1, 1, 1})
                                   .set_data_type(DataType::Float)));
  }
  return factors;
}

// One device buffer per factor, in order (cuDNN reads 16-byte aligned tensors: no shared one).
inline std::vector<DeviceBuffer> factor_buffers(std::span<const float> factors) {
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(factors.size());
  for (const float& f : factors) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(std::span(&f, 1)), "factor"));
  }
  return buffers;
}

}  // namespace dnngraph::test
