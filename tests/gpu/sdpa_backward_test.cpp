// Attention backward (sdpa_backward) on the GPU against a CPU reference in double: odd sequence
// lengths (17, 33), head dims 64 and 128, Half and BFloat16, causal masks of both alignments,
// padding masks from per-batch lengths, grouped- and multi-query attention (dK and dV summed over
// each group of query heads). O and Stats come from the forward computed here in double (O
// rounded to the io type, as a forward pass would hand it over); dO is uniform in [-1, 1].
// Score modifiers: an additive bias ([1, h_q or 1, s_q, s_kv], uniform in [-1, 1]) with its
// gradient dBias (the batch sum of dS before the attention scale), and a sliding window on the
// top-left causal mask (query i keeps key j for i - W < j <= i), in the recomputed P and so in
// every gradient.
// A graph cuDNN has no engine for is a finding (skipped with the Error), never a pass.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::Graph;
using dnngraph::SdpaBackwardAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using dnngraph::test::valid_rows;
using Dims = std::vector<std::int64_t>;

enum : std::int64_t {
  uid_q = 1,
  uid_k,
  uid_v,
  uid_o,
  uid_d_o,
  uid_stats,
  uid_len_q,
  uid_len_kv,
  uid_dq = 10,
  uid_dk,
  uid_dv,
  uid_d_sum,
  uid_bias = 20,
  uid_dbias,
  uid_slopes
};

std::size_t n(std::int64_t x) { return static_cast<std::size_t>(x); }

struct BackwardCase {
  std::string name;
  DataType type;
  std::int64_t b, h_q, h_k, s_q, s_kv, d;
  std::optional<DiagonalAlignment> causal;
  std::vector<std::int32_t> len_q, len_kv;  // per batch; empty: no padding mask
  std::uint32_t seed = 1;
  std::int64_t bias_heads = 0;  // 0: no bias; else [1, bias_heads, s_q, s_kv] (h_q or 1)
  std::optional<std::int64_t> window = std::nullopt;  // sliding window length (top-left causal)
  bool alibi = false;                                 // ALiBi with the standard slopes

  [[nodiscard]] bool padded() const { return !len_q.empty(); }
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(d)); }
  // dBias is asked for wherever cuDNN serves it: a bias of every query head.
  [[nodiscard]] bool dbias() const { return bias_heads != 0 && bias_heads == h_q; }
  [[nodiscard]] std::int64_t lq(std::int64_t bi) const { return padded() ? len_q[n(bi)] : s_q; }
  [[nodiscard]] std::int64_t lkv(std::int64_t bi) const { return padded() ? len_kv[n(bi)] : s_kv; }
  [[nodiscard]] bool keep(std::int64_t bi, std::int64_t i, std::int64_t j) const {
    if (i >= lq(bi) || j >= lkv(bi)) {
      return false;
    }
    if (window && j <= i - *window) {
      return false;
    }
    if (causal == DiagonalAlignment::TopLeft) {
      return j <= i;
    }
    if (causal == DiagonalAlignment::BottomRight) {
      return j <= i + lkv(bi) - lq(bi);
    }
    return true;
  }
  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + ", b " + std::to_string(b) +
           " h_q " + std::to_string(h_q) + " h_k " + std::to_string(h_k) + " s_q " +
           std::to_string(s_q) + " s_kv " + std::to_string(s_kv) + " d " + std::to_string(d) +
           dnngraph::test::modifiers_text(*this) + (dbias() ? ", dBias" : "") + ")";
  }
  [[nodiscard]] Dims q_dims() const { return {b, h_q, s_q, d}; }
  [[nodiscard]] Dims kv_dims() const { return {b, h_k, s_kv, d}; }
};

Graph make_graph(const BackwardCase& c) {
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(dims));
  };
  auto q = input("Q", uid_q, c.q_dims());
  auto k = input("K", uid_k, c.kv_dims());
  auto v = input("V", uid_v, c.kv_dims());
  auto o = input("O", uid_o, c.q_dims());
  auto d_o = input("dO", uid_d_o, c.q_dims());
  auto stats = g.tensor(TensorAttributes()
                            .set_name("Stats")
                            .set_uid(uid_stats)
                            .set_dim({c.b, c.h_q, c.s_q, 1})
                            .set_data_type(DataType::Float));
  SdpaBackwardAttributes a;
  a.set_name("attn_bwd").set_attn_scale(static_cast<float>(c.scale()));
  dnngraph::test::set_masks(c, g, a, uid_len_q, uid_len_kv);
  if (c.bias_heads != 0) {
    a.set_bias(input("bias", uid_bias, dnngraph::test::bias_dims(c))).set_dbias_output(c.dbias());
  }
  if (c.window) {
    a.set_sliding_window_length(*c.window);
  }
  if (c.alibi) {
    auto slopes = input("slopes", uid_slopes, {1, c.h_q, 1, 1});
    slopes->set_data_type(DataType::Float);
    a.set_alibi_mask(true).set_alibi_slopes(slopes);
  }
  auto [dq, dk, dv, d_sum] = g.sdpa_backward(q, k, v, o, d_o, stats, a);
  if (c.dbias()) {
    g.dbias(dq)->set_name("dBias").set_uid(uid_dbias).set_output(true);
  }
  dq->set_name("dQ").set_uid(uid_dq).set_output(true);
  dk->set_name("dK").set_uid(uid_dk).set_output(true);
  dv->set_name("dV").set_uid(uid_dv).set_output(true);
  d_sum->set_name("D").set_uid(uid_d_sum).set_output(true);
  return g;
}

// The forward's O and Stats, and the gradients, in double. Query head h reads K/V head
// h / (h_q / h_k); rows of a batch past its lengths, and rows whose every key is masked, are
// not valid (cuDNN leaves them undefined).
struct Reference {
  std::vector<double> o, stats;           // [b, h_q, s_q, d], [b, h_q, s_q]
  std::vector<double> dq, dk, dv, d_sum;  // Q's, K's, V's dims; [b, h_q, s_q]
  std::vector<double> dbias;              // the bias's dims: sum over the batch of dS / scale
  std::vector<bool> q_row_valid;          // [b, h_q, s_q]: inside seq_len_q, a key kept
  std::vector<bool> kv_row_valid;         // [b, h_k, s_kv]: inside seq_len_kv
};

// softmax(scale Q K^T + masks) and its log-sum-exp for one query row; false if every key is
// masked.
bool probabilities(const BackwardCase& c, const std::vector<float>& q, const std::vector<float>& k,
                   const std::vector<float>& bias, std::int64_t bi, std::int64_t h, std::int64_t i,
                   std::vector<double>& p, double& lse) {
  const std::int64_t hk = h / (c.h_q / c.h_k);
  const std::size_t row = n((bi * c.h_q + h) * c.s_q + i);
  const std::vector<float> slopes = dnngraph::alibi_slopes(c.h_q);
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < c.s_kv; ++j) {
    double dot = 0;
    for (std::int64_t x = 0; x < c.d; ++x) {
      dot += static_cast<double>(q[row * n(c.d) + n(x)]) *
             k[n(((bi * c.h_k + hk) * c.s_kv + j) * c.d + x)];
    }
    const double added = (c.bias_heads != 0 ? bias[dnngraph::test::bias_at(c, h, i, j)] : 0.0) +
                         dnngraph::test::alibi_term(c, slopes, h, i, j);
    p[n(j)] = c.keep(bi, i, j) ? dot * c.scale() + added : -std::numeric_limits<double>::infinity();
    max = std::max(max, p[n(j)]);
  }
  if (!std::isfinite(max)) {
    return false;
  }
  double sum = 0;
  for (double& s : p) {
    s = std::exp(s - max);
    sum += s;
  }
  for (double& s : p) {
    s /= sum;
  }
  lse = max + std::log(sum);
  return true;
}

Reference forward(const BackwardCase& c, const std::vector<float>& q, const std::vector<float>& k,
                  const std::vector<float>& v, const std::vector<float>& bias) {
  const std::size_t rows = n(c.b * c.h_q * c.s_q);
  Reference r;
  r.o.assign(rows * n(c.d), 0.0);
  r.stats.assign(rows, 0.0);  // 0 where undefined: what the backward reads there is finite
  r.q_row_valid.assign(rows, false);
  std::vector<double> p(n(c.s_kv));
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t h = 0; h < c.h_q; ++h) {
      const std::int64_t hk = h / (c.h_q / c.h_k);
      for (std::int64_t i = 0; i < c.s_q; ++i) {
        const std::size_t row = n((bi * c.h_q + h) * c.s_q + i);
        double lse = 0;
        if (!probabilities(c, q, k, bias, bi, h, i, p, lse)) {
          continue;
        }
        r.q_row_valid[row] = true;
        r.stats[row] = lse;
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          for (std::int64_t x = 0; x < c.d; ++x) {
            r.o[row * n(c.d) + n(x)] += p[n(j)] * v[n(((bi * c.h_k + hk) * c.s_kv + j) * c.d + x)];
          }
        }
      }
    }
  }
  return r;
}

// dV = P^T dO, dS = P (dO V^T - D) scale, dK = dS^T Q, dQ = dS K, D = rowsum(dO O), dBias = the
// batch sum of dS / scale; o is the O the GPU reads (rounded to the io type).
void backward(const BackwardCase& c, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<float>& bias,
              const std::vector<float>& o, const std::vector<float>& d_o, Reference& r) {
  const std::size_t q_count = n(c.b * c.h_q * c.s_q * c.d);
  const std::size_t kv_count = n(c.b * c.h_k * c.s_kv * c.d);
  r.dq.assign(q_count, 0.0);
  r.dk.assign(kv_count, 0.0);
  r.dv.assign(kv_count, 0.0);
  r.d_sum.assign(n(c.b * c.h_q * c.s_q), 0.0);
  r.dbias.assign(c.bias_heads != 0 ? n(c.bias_heads * c.s_q * c.s_kv) : 0U, 0.0);
  r.kv_row_valid.assign(n(c.b * c.h_k * c.s_kv), false);
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t hk = 0; hk < c.h_k; ++hk) {
      for (std::int64_t j = 0; j < c.lkv(bi); ++j) {
        r.kv_row_valid[n((bi * c.h_k + hk) * c.s_kv + j)] = true;
      }
    }
  }
  std::vector<double> p(n(c.s_kv));
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t h = 0; h < c.h_q; ++h) {
      const std::int64_t hk = h / (c.h_q / c.h_k);
      for (std::int64_t i = 0; i < c.s_q; ++i) {
        const std::size_t row = n((bi * c.h_q + h) * c.s_q + i);
        double lse = 0;
        if (!probabilities(c, q, k, bias, bi, h, i, p, lse)) {
          continue;
        }
        const std::size_t qi = row * n(c.d);
        double d_sum = 0;
        for (std::int64_t x = 0; x < c.d; ++x) {
          d_sum += static_cast<double>(d_o[qi + n(x)]) * o[qi + n(x)];
        }
        r.d_sum[row] = d_sum;
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          if (p[n(j)] == 0) {
            continue;
          }
          const std::size_t kj = n(((bi * c.h_k + hk) * c.s_kv + j) * c.d);
          double dp = 0;
          for (std::int64_t x = 0; x < c.d; ++x) {
            dp += static_cast<double>(d_o[qi + n(x)]) * v[kj + n(x)];
          }
          const double ds = p[n(j)] * (dp - d_sum) * c.scale();
          if (c.dbias()) {
            r.dbias[dnngraph::test::bias_at(c, h, i, j)] += p[n(j)] * (dp - d_sum);
          }
          for (std::int64_t x = 0; x < c.d; ++x) {
            r.dq[qi + n(x)] += ds * k[kj + n(x)];
            r.dk[kj + n(x)] += ds * q[qi + n(x)];
            r.dv[kj + n(x)] += p[n(j)] * d_o[qi + n(x)];
          }
        }
      }
    }
  }
}

// Tolerances. Inputs are uniform in [-1, 1] and exact in their type; the matmuls accumulate in
// Float. What rounds to the io type: P^T and dS^T (before the dV and dK matmuls), the per-head
// dK and dV of grouped-query attention (before their sum) and the gradients themselves, each by
// at most u (2^-8 BFloat16, 2^-11 Half: half an ulp at 1) relative. A sum of terms each off by u
// relative is off by u times the sum of their magnitudes, which the gradient's largest magnitude
// bounds here up to a small factor: abs = 8 u max|reference|, rel = 8 u. A wrong mask, scale or
// head mapping errs by the gradient's own size.
Tolerance tolerance(DataType type, const std::vector<double>& reference) {
  const double u = type == DataType::BFloat16 ? 1.0 / 256 : 1.0 / 2048;
  double max = 0;
  for (const double x : reference) {
    max = std::max(max, std::fabs(x));
  }
  return {.abs = 8 * u * max, .rel = 8 * u};
}

struct Errors {
  dnngraph::test::Comparison dq, dk, dv, d_sum;
  std::optional<dnngraph::test::Comparison> dbias;
};

HostTensor encode(DataType type, const std::vector<double>& values) {
  HostTensor t;
  t.bytes.resize(values.size() * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto f = static_cast<float>(values[i]);
    const std::uint16_t bits = type == DataType::Half ? dnngraph::test::float_to_half(f)
                                                      : dnngraph::test::float_to_bfloat16(f);
    t.values.push_back(type == DataType::Half ? dnngraph::test::half_to_float(bits)
                                              : dnngraph::test::bfloat16_to_float(bits));
    std::memcpy(t.bytes.data() + i * sizeof bits, &bits, sizeof bits);
  }
  return t;
}

DeviceBuffer upload(std::span<const std::byte> bytes, const char* what) {
  return require_cuda(DeviceBuffer::copy_of(bytes), what);
}

// Runs a built graph once and compares dQ, dK, dV and D with the reference on the valid rows.
// Every output byte starts as NaN.
Errors run_and_compare(const BackwardCase& c, const Graph& g, const dnngraph::Handle& handle) {
  std::mt19937 rng(c.seed);
  const auto count = [](const Dims& d) { return dnngraph::test::element_count(d); };
  const HostTensor q = dnngraph::test::random_tensor(c.type, count(c.q_dims()), rng);
  const HostTensor k = dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng);
  const HostTensor v = dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng);
  const HostTensor d_o = dnngraph::test::random_tensor(c.type, count(c.q_dims()), rng);
  const HostTensor bias = dnngraph::test::random_tensor(
      c.type, c.bias_heads != 0 ? count(dnngraph::test::bias_dims(c)) : std::size_t{1}, rng);
  Reference r = forward(c, q.values, k.values, v.values, bias.values);
  const HostTensor o = encode(c.type, r.o);
  backward(c, q.values, k.values, v.values, bias.values, o.values, d_o.values, r);
  std::vector<float> stats(r.stats.begin(), r.stats.end());

  const std::size_t io = static_cast<std::size_t>(dnngraph::size_of(c.type));
  std::vector<std::byte> dq_bytes(r.dq.size() * io), dk_bytes(r.dk.size() * io),
      dv_bytes(r.dv.size() * io);
  std::vector<float> d_sum(r.d_sum.size());
  DeviceBuffer q_dev = upload(q.bytes, "Q");
  DeviceBuffer k_dev = upload(k.bytes, "K");
  DeviceBuffer v_dev = upload(v.bytes, "V");
  DeviceBuffer o_dev = upload(o.bytes, "O");
  DeviceBuffer d_o_dev = upload(d_o.bytes, "dO");
  DeviceBuffer stats_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const float>(stats)), "Stats");
  DeviceBuffer dq_dev = require_cuda(DeviceBuffer::allocate(dq_bytes.size()), "dQ");
  DeviceBuffer dk_dev = require_cuda(DeviceBuffer::allocate(dk_bytes.size()), "dK");
  DeviceBuffer dv_dev = require_cuda(DeviceBuffer::allocate(dv_bytes.size()), "dV");
  DeviceBuffer d_sum_dev = require_cuda(DeviceBuffer::allocate(d_sum.size() * sizeof(float)), "D");
  DeviceBuffer bias_dev = upload(bias.bytes, "bias");
  std::vector<std::byte> dbias_bytes(std::max<std::size_t>(r.dbias.size(), 1) * io);
  DeviceBuffer dbias_dev = require_cuda(DeviceBuffer::allocate(dbias_bytes.size()), "dBias");
  for (DeviceBuffer* out : {&dq_dev, &dk_dev, &dv_dev, &d_sum_dev, &dbias_dev}) {
    require_cuda(out->fill_bytes(0xFF), "fill an output with NaN");
  }
  const std::vector<std::int32_t> len_q = c.padded() ? c.len_q : std::vector<std::int32_t>{1};
  const std::vector<std::int32_t> len_kv = c.padded() ? c.len_kv : std::vector<std::int32_t>{1};
  DeviceBuffer len_q_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const std::int32_t>(len_q)), "seq_len_q");
  DeviceBuffer len_kv_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const std::int32_t>(len_kv)), "seq_len_kv");
  const auto workspace_size = g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(workspace_size.has_value(), "workspace: " << describe(workspace_size));
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(*workspace_size, 1))),
      "workspace");
  // NaN bytes in the workspace too: dQ's Float accumulator lives there (cuDNN >= 9.6), and the
  // engine must zero it itself.
  require_cuda(workspace.fill_bytes(0xFF), "fill the workspace with NaN");
  std::unordered_map<std::int64_t, void*> pack{
      {uid_q, q_dev.get()},        {uid_k, k_dev.get()},     {uid_v, v_dev.get()},
      {uid_o, o_dev.get()},        {uid_d_o, d_o_dev.get()}, {uid_stats, stats_dev.get()},
      {uid_dq, dq_dev.get()},      {uid_dk, dk_dev.get()},   {uid_dv, dv_dev.get()},
      {uid_d_sum, d_sum_dev.get()}};
  if (c.padded()) {
    pack[uid_len_q] = len_q_dev.get();
    pack[uid_len_kv] = len_kv_dev.get();
  }
  if (c.bias_heads != 0) {
    pack[uid_bias] = bias_dev.get();
  }
  if (c.dbias()) {
    pack[uid_dbias] = dbias_dev.get();
  }
  const std::vector<float> slopes = dnngraph::alibi_slopes(c.h_q);
  DeviceBuffer slopes_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const float>(slopes)), "ALiBi slopes");
  if (c.alibi) {
    pack[uid_slopes] = slopes_dev.get();
  }
  // Without dBias, dQ's Float accumulator lives in the workspace where the loaded cuDNN offers
  // it (api/graph_attention.cpp), so a workspace off a 16-byte boundary would misalign a tensor
  // declared aligned: refused before cuDNN sees it.
  if (!c.dbias() && dnngraph::cudnn_offers(dnngraph::CudnnCapability::SdpaBackwardAccumulator)) {
    const auto moved = g.execute(handle, pack, static_cast<std::byte*>(workspace.get()) + 8);
    BOOST_REQUIRE_MESSAGE(!moved.has_value(), c.text() << ": a workspace 8 bytes in ran");
    BOOST_TEST(dnngraph::to_string(moved.error().code) ==
               dnngraph::to_string(dnngraph::ErrorCode::InvalidAttribute));
    BOOST_TEST((moved.error().message.find("workspace pointer is 8 byte(s) past a 16-byte "
                                           "boundary") != std::string::npos &&
                moved.error().message.find("lives in the workspace") != std::string::npos),
               moved.error().message);
  }
  // Twice: the second run starts from the first one's accumulator, which must not add up.
  for (int run = 0; run < 2; ++run) {
    const auto ran = g.execute(handle, pack, workspace.get());
    BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  }
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(dq_dev.download(std::span<std::byte>(dq_bytes)), "dQ");
  require_cuda(dk_dev.download(std::span<std::byte>(dk_bytes)), "dK");
  require_cuda(dv_dev.download(std::span<std::byte>(dv_bytes)), "dV");
  require_cuda(d_sum_dev.download(std::span<float>(d_sum)), "D");
  require_cuda(dbias_dev.download(std::span<std::byte>(dbias_bytes)), "dBias");

  const auto d = static_cast<std::size_t>(c.d);
  const auto gradient = [&](const std::vector<std::byte>& bytes, const std::vector<double>& want,
                            const std::vector<bool>& valid) {
    const std::vector<float> got = dnngraph::test::decode(c.type, bytes);
    return dnngraph::test::compare(valid_rows(std::span<const float>(got), valid, d),
                                   valid_rows(std::span<const double>(want), valid, d),
                                   tolerance(c.type, want));
  };
  Errors e;
  e.dq = gradient(dq_bytes, r.dq, r.q_row_valid);
  e.dk = gradient(dk_bytes, r.dk, r.kv_row_valid);
  e.dv = gradient(dv_bytes, r.dv, r.kv_row_valid);
  // D sums d products of io-type values in Float: only the order of the sum differs.
  e.d_sum = dnngraph::test::compare(valid_rows(std::span<const float>(d_sum), r.q_row_valid, 1),
                                    valid_rows(std::span<const double>(r.d_sum), r.q_row_valid, 1),
                                    Tolerance{.abs = 1e-4, .rel = 1e-5});
  if (c.dbias()) {  // the batch sum of dS, rounded once to the io type: dQ's argument holds
    const std::vector<float> got = dnngraph::test::decode(c.type, dbias_bytes);
    e.dbias = dnngraph::test::compare(std::span<const float>(got), std::span<const double>(r.dbias),
                                      tolerance(c.type, r.dbias));
  }
  return e;
}

boost::unit_test::precondition builds(const BackwardCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

void check_against_reference(const BackwardCase& c) {
  const auto taken = dnngraph::test::take_case(c.text(), [c] { return make_graph(c); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), c.text() << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
  BOOST_REQUIRE(b.handle.has_value());
  const Errors e = run_and_compare(c, b.graph, *b.handle);
  BOOST_TEST_MESSAGE(c.text() << ": dQ " << e.dq.describe() << "; dK " << e.dk.describe() << "; dV "
                              << e.dv.describe() << "; D " << e.d_sum.describe()
                              << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(e.dq.passed(), c.text() << ": dQ " << e.dq.describe());
  BOOST_CHECK_MESSAGE(e.dk.passed(), c.text() << ": dK " << e.dk.describe());
  BOOST_CHECK_MESSAGE(e.dv.passed(), c.text() << ": dV " << e.dv.describe());
  BOOST_CHECK_MESSAGE(e.d_sum.passed(), c.text() << ": D " << e.d_sum.describe());
  if (e.dbias) {
    BOOST_TEST_MESSAGE(c.text() << ": dBias " << e.dbias->describe());
    BOOST_CHECK_MESSAGE(e.dbias->passed(), c.text() << ": dBias " << e.dbias->describe());
  }
}

namespace cases {
const auto bf16 = DataType::BFloat16;
const auto half = DataType::Half;
const auto top_left = DiagonalAlignment::TopLeft;
const auto bottom_right = DiagonalAlignment::BottomRight;
const BackwardCase plain_half{"no mask", half, 1, 2, 2, 17, 33, 64, {}, {}, {}, 2101};
const BackwardCase causal_bf16{"causal top-left", bf16, 2,  2,   2, 33, 33, 64,
                               top_left,          {},   {}, 2102};
const BackwardCase padded_half{"padding", half, 2, 2, 2, 33, 33, 64, {}, {33, 20}, {33, 17}, 2103};
const BackwardCase padded_bottom_right_bf16{"padding and causal bottom-right",
                                            bf16,
                                            2,
                                            2,
                                            2,
                                            17,
                                            33,
                                            128,
                                            bottom_right,
                                            {17, 9},
                                            {33, 20},
                                            2104};
const BackwardCase gqa_causal_half{
    "grouped-query (2:1), causal top-left", half, 1, 4, 2, 33, 33, 64, top_left, {}, {}, 2105};
// The shape of python/tests/test_gpu_sdpa.py's torch autograd check: grouped-query with batch 2.
const BackwardCase gqa_batch2_half{"grouped-query (2:1) with batch 2, causal top-left",
                                   half,
                                   2,
                                   4,
                                   2,
                                   33,
                                   33,
                                   64,
                                   top_left,
                                   {},
                                   {},
                                   2108};
const BackwardCase mqa_bf16{
    "multi-query (4:1 to one head)", bf16, 1, 4, 1, 33, 17, 128, {}, {}, {}, 2106};
const BackwardCase bottom_right_square_half{
    "causal bottom-right, square", half, 1, 2, 2, 33, 33, 64, bottom_right, {}, {}, 2107};
// Score modifiers (b 2, h 4, odd lengths); dBias with every bias of all query heads.
using dnngraph::test::with_modifiers;
const BackwardCase bias_dbias_half = with_modifiers(
    BackwardCase{
        "bias of every head, causal top-left", half, 2, 4, 4, 97, 97, 64, top_left, {}, {}, 2111},
    4, std::nullopt);
const BackwardCase broadcast_bias_bf16 = with_modifiers(
    BackwardCase{"bias shared by the heads", bf16, 2, 4, 4, 64, 129, 128, {}, {}, {}, 2112}, 1,
    std::nullopt);
const BackwardCase window_half = with_modifiers(
    BackwardCase{"sliding window", half, 2, 4, 4, 130, 130, 64, top_left, {}, {}, 2113}, 0, 32);
const BackwardCase window_bias_dbias_bf16 =
    with_modifiers(BackwardCase{"grouped-query, sliding window and bias",
                                bf16,
                                2,
                                4,
                                2,
                                201,
                                201,
                                128,
                                top_left,
                                {},
                                {},
                                2114},
                   4, 48);
const BackwardCase alibi_half = with_modifiers(
    BackwardCase{"ALiBi, causal top-left", half, 2, 4, 4, 150, 150, 64, top_left, {}, {}, 2115}, 0,
    std::nullopt, true);
const BackwardCase alibi_bias_window_bf16 = with_modifiers(
    BackwardCase{
        "ALiBi, bias and sliding window", bf16, 2, 4, 4, 96, 160, 128, top_left, {}, {}, 2116},
    4, 40, true);
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_backward)
DNNGRAPH_REFERENCE_CASE(half_without_mask_matches_reference, cases::plain_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_causal_top_left_matches_reference, cases::causal_bf16)
DNNGRAPH_REFERENCE_CASE(half_padding_mask_matches_reference, cases::padded_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_padding_with_causal_bottom_right_matches_reference,
                        cases::padded_bottom_right_bf16)
DNNGRAPH_REFERENCE_CASE(half_grouped_query_causal_matches_reference, cases::gqa_causal_half)
DNNGRAPH_REFERENCE_CASE(half_grouped_query_batch_2_matches_reference, cases::gqa_batch2_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_multi_query_head_dim_128_matches_reference, cases::mqa_bf16)
DNNGRAPH_REFERENCE_CASE(half_causal_bottom_right_square_matches_reference,
                        cases::bottom_right_square_half)
DNNGRAPH_REFERENCE_CASE(half_bias_and_dbias_match_reference, cases::bias_dbias_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_shared_bias_matches_reference, cases::broadcast_bias_bf16)
DNNGRAPH_REFERENCE_CASE(half_sliding_window_matches_reference, cases::window_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_window_bias_dbias_match_reference, cases::window_bias_dbias_bf16)
DNNGRAPH_REFERENCE_CASE(half_alibi_matches_reference, cases::alibi_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_alibi_bias_window_match_reference, cases::alibi_bias_window_bf16)
BOOST_AUTO_TEST_SUITE_END()
