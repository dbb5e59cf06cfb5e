// gpu_sdpa_fp8_backward_test's graphs through cudnn-frontend's own sdpa_fp8_backward node on the
// same cuDNN: the reference for the initcheck finding in cudnn::fusion::fmha_reduce_head_fp8
// (docs/development.md, "The GPU sanitizers over the suite": 524,268 reads of uninitialized
// device memory on cuDNN 9.19.0 and 9.28.1). The cases are the test's six (its `cases::`): b 2,
// h_q 4, d 128, Q, K, V and O Fp8E4M3, Stats Float, io Fp8E4M3 with Float intermediates and
// compute, attention scale 1/sqrt(128); plain (h_k 4, s 128), causal (s 256, top-left),
// gqa_causal (h_k 2, s_q 128, s_kv 256), e5m2_causal (dO and the gradients Fp8E5M2),
// gqa_bshd_e5m2 (h_k 2, s 256, BSHD memory, E5M2) and padded_causal (seq_len_q {256, 131},
// seq_len_kv {200, 97}); the same uids, factors (descales 1/2, 1/2, 1/4, 1/256, 1/4, 1/256,
// 1/scale_dP; scale_s 256; scale_dQ, dK, dV, dP the largest powers of two that keep twice the
// reference's amax in range) and random FP8 inputs (uniform in [-4, 4], the test's seeds and
// order), O and Stats from a CPU forward in double. Every input byte is written; the gradients
// and amax are filled with 0xFF (NaN) as the test fills them. Each case is built once, executed
// once and its dQ, dK, dV (valid rows) and amax compared with a CPU backward in double, loosely
// (0.1 max |reference| + 0.25 |reference|: FP8 rounds P and dS, the test argues the tight bound).
// If initcheck reports the same kernel here, the finding is cuDNN's:
//   compute-sanitizer --tool initcheck bundle/bench_sdpa_fp8_backward_frontend_probe
// Arguments: case names (default all), and the plan options of frontend_probe.hpp
// (parse_plan_choice: --heuristics, --index, --engine "engine N, knobs {...}" as the test's log
// prints the plan, --zero-workspace). Exit 0 when every case built, ran and agreed; 1 otherwise;
// 2 for a bad command line; 77 without a CUDA device. Needs Hopper (FP8 attention backward).
#include "frontend_probe.hpp"

#include <cuda_fp8.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using dnngraph_bench::Device;
using dnngraph_bench::Dims;
using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

constexpr std::int64_t kB = 2, kHq = 4, kD = 128;
constexpr std::int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidDo = 5, kUidStats = 6,
                       kUidLenQ = 8, kUidLenKv = 9, kFirstFactorUid = 11, kFirstOutputUid = 30;
constexpr float kDescaleQ = 0.5F, kDescaleK = 0.5F, kDescaleV = 0.25F, kDescaleDo = 0.25F;
constexpr float kScaleO = 256.0F, kScaleS = 256.0F;

struct Case {
  const char* key;  // the command line's name, the test's `cases::` name
  std::int64_t h_k, s_q, s_kv;
  bool causal;  // top-left
  std::uint32_t seed;
  bool e5m2 = false;  // dO and the gradients Fp8E5M2 (else Fp8E4M3)
  bool bshd = false;  // Q, K, V, O, dO and the gradients token-major
  // Per batch; empty: no padding mask. The `{}`s let the cases leave them out (no
  // -Wmissing-field-initializers).
  std::vector<std::int32_t> len_q{}, len_kv{};  // NOLINT(readability-redundant-member-init)

  [[nodiscard]] Dims dims(bool query) const {
    return query ? Dims{kB, kHq, s_q, kD} : Dims{kB, h_k, s_kv, kD};
  }
  [[nodiscard]] Dims strides(const Dims& d) const {
    return bshd ? Dims{d[2] * d[1] * d[3], d[3], d[1] * d[3], 1} : dnngraph_bench::packed(d);
  }
  // Query rows (or key rows) of batch b inside its length; rows past it are undefined.
  [[nodiscard]] std::int64_t rows(bool query, std::int64_t b) const {
    const std::vector<std::int32_t>& lengths = query ? len_q : len_kv;
    return lengths.empty() ? (query ? s_q : s_kv) : lengths.at(static_cast<std::size_t>(b));
  }
  // Whether element e (row-major) of a [b, h, s, d] tensor of dims(query) lies in such a row.
  [[nodiscard]] bool counts(bool query, std::size_t e) const {
    const Dims d = dims(query);
    const auto row = static_cast<std::int64_t>(e / kD) % d[2];
    const auto b = static_cast<std::int64_t>(e / (dnngraph_bench::element_count(d) / kB));
    return row < rows(query, b);
  }
};

const std::array<Case, 6> kCases{{
    {"plain", 4, 128, 128, false, 901},
    {"causal", 4, 256, 256, true, 902},
    {"gqa_causal", 2, 128, 256, true, 903},
    {"e5m2_causal", 4, 256, 256, true, 904, true},
    {"gqa_bshd_e5m2", 2, 256, 256, false, 905, true, true},
    {"padded_causal", 4, 256, 256, true, 906, false, false, {256, 131}, {200, 97}},
}};

// FP8 bits of v (nearest, ties to even, the largest finite value beyond it) and back.
std::uint8_t fp8_bits(float v, bool e5m2) {
  return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
}
float fp8_value(std::uint8_t bits, bool e5m2) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, e5m2 ? __NV_E5M2 : __NV_E4M3)));
}

// An FP8 tensor: its values dequantized in [b, h, s, d] order, its bytes in memory order.
struct Fp8 {
  std::vector<float> real;
  std::vector<std::uint8_t> bytes;
};
// Each value value(i) rounded to the format (times scale) at its offset; real is the stored
// value over scale.
template <class Value>
Fp8 quantize(const Case& c, const Dims& dims, bool e5m2, float scale, Value value) {
  const std::size_t n = dnngraph_bench::element_count(dims);
  const Dims strides = c.strides(dims);
  Fp8 t{std::vector<float>(n), std::vector<std::uint8_t>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t bits = fp8_bits(value(i) * scale, e5m2);
    t.real[i] = fp8_value(bits, e5m2) / scale;
    t.bytes[dnngraph_bench::offset(dims, strides, i)] = bits;
  }
  return t;
}
// Values uniform in [-4, 4] rounded to the format, dequantized by descale, as the test draws.
Fp8 random_fp8(const Case& c, bool query, bool e5m2, float descale, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-4.0F, 4.0F);
  return quantize(c, c.dims(query), e5m2, 1 / descale,
                  [&](std::size_t) { return dist(rng) * descale; });
}

// The CPU reference in double, in [b, h, s, d] order: the forward's O and Stats, then from the
// dequantized inputs (O as stored) the gradients and max |dS| (dS with the attention scale, as
// the graph computes it).
struct Reference {
  std::vector<double> o, stats;
  std::array<std::vector<double>, 3> grads;  // dQ, dK, dV
  double amax_ds = 0;
};
const double kScale = 1.0 / std::sqrt(static_cast<double>(kD));
constexpr double kMasked = -std::numeric_limits<double>::infinity();

// Query row i of head h in batch b (K's and V's head: h over the group size), and the key rows it
// sees: inside the batch's length and, causal, at or before i (top-left).
struct Row {
  const Case& c;
  std::int64_t b, h, i;
  [[nodiscard]] bool sees(std::int64_t j) const {
    return j < c.rows(false, b) && (!c.causal || j <= i);
  }
  [[nodiscard]] std::size_t q(std::int64_t e = 0) const {
    return static_cast<std::size_t>((((b * kHq) + h) * c.s_q + i) * kD + e);
  }
  [[nodiscard]] std::size_t kv(std::int64_t j, std::int64_t e = 0) const {
    const std::int64_t head = h / (kHq / c.h_k);
    return static_cast<std::size_t>((((b * c.h_k) + head) * c.s_kv + j) * kD + e);
  }
};
double dot(const std::vector<float>& a, std::size_t at, const std::vector<float>& b,
           std::size_t bt) {
  double sum = 0;
  for (std::size_t e = 0; e < static_cast<std::size_t>(kD); ++e) {
    sum += static_cast<double>(a[at + e]) * b[bt + e];
  }
  return sum;
}
// Calls f(row) for every valid query row.
template <class F>
void each_row(const Case& c, F f) {
  for (std::int64_t b = 0; b < kB; ++b) {
    for (std::int64_t h = 0; h < kHq; ++h) {
      for (std::int64_t i = 0; i < c.rows(true, b); ++i) {
        f(Row{c, b, h, i});
      }
    }
  }
}

void forward(const Case& c, const Fp8& q, const Fp8& k, const Fp8& v, Reference& r) {
  r.o.assign(q.real.size(), 0.0);  // rows without output: O and Stats 0, as the test stores them
  r.stats.assign(q.real.size() / kD, 0.0);
  each_row(c, [&](const Row& row) {
    std::vector<double> s(static_cast<std::size_t>(c.s_kv), kMasked);
    for (std::int64_t j = 0; j < c.s_kv; ++j) {
      s[static_cast<std::size_t>(j)] =
          row.sees(j) ? kScale * dot(q.real, row.q(), k.real, row.kv(j)) : kMasked;
    }
    const double top = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (const double x : s) sum += std::exp(x - top);
    r.stats[row.q() / kD] = top + std::log(sum);
    for (std::int64_t j = 0; j < c.s_kv; ++j) {
      const double p = std::exp(s[static_cast<std::size_t>(j)] - top) / sum;
      for (std::int64_t e = 0; e < kD && p > 0; ++e) r.o[row.q(e)] += p * v.real[row.kv(j, e)];
    }
  });
}

void backward(const Case& c, const std::array<const Fp8*, 5>& in, const std::vector<float>& stats,
              Reference& r) {
  const auto& [q, k, v, o, d_o] = in;
  r.grads = {std::vector<double>(q->real.size()), std::vector<double>(k->real.size()),
             std::vector<double>(v->real.size())};
  auto& [dq, dk, dv] = r.grads;
  each_row(c, [&](const Row& row) {
    const double d = dot(d_o->real, row.q(), o->real, row.q());
    for (std::int64_t j = 0; j < c.s_kv; ++j) {
      if (!row.sees(j)) continue;
      const double p =
          std::exp(kScale * dot(q->real, row.q(), k->real, row.kv(j)) - stats[row.q() / kD]);
      const double ds = kScale * p * (dot(d_o->real, row.q(), v->real, row.kv(j)) - d);
      r.amax_ds = std::max(r.amax_ds, std::abs(ds));
      for (std::int64_t e = 0; e < kD; ++e) {
        dv[row.kv(j, e)] += p * d_o->real[row.q(e)];
        dq[row.q(e)] += ds * k->real[row.kv(j, e)];
        dk[row.kv(j, e)] += ds * q->real[row.q(e)];
      }
    }
  });
}

// The largest |x| over the elements that count.
double largest_valid(const Case& c, bool query, const std::vector<double>& x) {
  double top = 0;
  for (std::size_t e = 0; e < x.size(); ++e) {
    top = c.counts(query, e) ? std::max(top, std::abs(x[e])) : top;
  }
  return top;
}
// The largest power of two s with 2 amax s <= the format's largest value (E4M3 448, E5M2 57344).
float scale_for(bool e5m2, double amax) {
  const double largest = e5m2 ? 57344.0 : 448.0;
  return amax > 0 ? std::ldexp(1.0F, static_cast<int>(std::floor(std::log2(largest / (2 * amax)))))
                  : 1.0F;
}

constexpr std::array<const char*, 12> kFactorNames{
    "descale_q",  "descale_k", "descale_v", "descale_o", "descale_dO", "descale_s",
    "descale_dP", "scale_s",   "scale_dQ",  "scale_dK",  "scale_dV",   "scale_dP"};
constexpr std::array<const char*, 7> kOutputNames{"dQ",      "dK",      "dV",     "Amax_dQ",
                                                  "Amax_dK", "Amax_dV", "Amax_dP"};

Tensor input(fe::graph::Graph& g, const char* name, std::int64_t uid, const Dims& dims,
             const Dims& strides, fe::DataType_t type) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dims)
                      .set_stride(strides)
                      .set_data_type(type));
}

// The test's graph (make_graph in tests/gpu/sdpa_fp8_backward_test.cpp) in the frontend's words.
void make_graph(fe::graph::Graph& g, const Case& c) {
  const auto e4m3 = fe::DataType_t::FP8_E4M3;
  const auto grad = c.e5m2 ? fe::DataType_t::FP8_E5M2 : e4m3;
  const auto fp32 = fe::DataType_t::FLOAT;
  g.set_io_data_type(e4m3).set_intermediate_data_type(fp32).set_compute_data_type(fp32);
  const Dims q_dims = c.dims(true), kv_dims = c.dims(false), one{1, 1, 1, 1};
  const Dims stats_dims{kB, kHq, c.s_q, 1};
  auto q = input(g, "Q", kUidQ, q_dims, c.strides(q_dims), e4m3);
  auto k = input(g, "K", kUidK, kv_dims, c.strides(kv_dims), e4m3);
  auto v = input(g, "V", kUidV, kv_dims, c.strides(kv_dims), e4m3);
  auto o = input(g, "O", kUidO, q_dims, c.strides(q_dims), e4m3);
  auto d_o = input(g, "dO", kUidDo, q_dims, c.strides(q_dims), grad);
  auto stats = input(g, "Stats", kUidStats, stats_dims, dnngraph_bench::packed(stats_dims), fp32);
  std::vector<Tensor> f;
  f.reserve(kFactorNames.size());
  for (std::size_t i = 0; i < kFactorNames.size(); ++i) {
    f.push_back(input(g, kFactorNames.at(i), kFirstFactorUid + static_cast<std::int64_t>(i), one,
                      one, fp32));
  }
  auto a = fe::graph::SDPA_fp8_backward_attributes().set_name("attn").set_attn_scale(
      static_cast<float>(kScale));
  a.set_causal_mask(c.causal);
  if (!c.len_q.empty()) {
    const Dims lengths{kB, 1, 1, 1};
    a.set_padding_mask(true)
        .set_seq_len_q(input(g, "seq_len_q", kUidLenQ, lengths, one, fe::DataType_t::INT32))
        .set_seq_len_kv(input(g, "seq_len_kv", kUidLenKv, lengths, one, fe::DataType_t::INT32));
  }
  const auto out = g.sdpa_fp8_backward(q, k, v, o, d_o, stats, f[0], f[1], f[2], f[3], f[4], f[5],
                                       f[6], f[7], f[8], f[9], f[10], f[11], a);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Dims d = c.dims(i == 0);
    out.at(i)
        ->set_output(true)
        .set_name(kOutputNames.at(i))
        .set_uid(kFirstOutputUid + static_cast<std::int64_t>(i))
        .set_dim(i < 3 ? d : one)
        .set_stride(i < 3 ? c.strides(d) : one)
        .set_data_type(i < 3 ? grad : fp32);
  }
}

// One gradient (stored bytes, its scale, the GPU's amax) against the reference over the rows
// that count, on one line; true when it agrees loosely.
bool check(const Case& c, std::size_t which, const std::vector<std::uint8_t>& bytes, float scale,
           float amax, const std::vector<double>& want) {
  const bool query = which == 0;
  const Dims dims = c.dims(query);
  const Dims strides = c.strides(dims);
  const double top = largest_valid(c, query, want);
  dnngraph_bench::Worst worst;
  for (std::size_t e = 0; e < want.size(); ++e) {
    if (c.counts(query, e)) {
      const std::uint8_t stored = bytes[dnngraph_bench::offset(dims, strides, e)];
      worst.add_within(fp8_value(stored, c.e5m2) / scale, want[e], 0.1 * top, 0.25);
    }
  }
  const bool ok = worst.outside == 0 && top > 0 && std::abs(amax - top) <= 0.25 * top;
  std::printf(
      "  %s: NaN %zu of %zu, max |error| %.3g, largest |reference| %.3g, %zu outside; "
      "%s %.4g: %s\n",
      kOutputNames.at(which), worst.nan, worst.compared, worst.max_error, top, worst.outside,
      kOutputNames.at(3 + which), amax, ok ? "agrees" : "DIFFERS");
  return ok;
}

bool run(cudnnHandle_t handle, const Case& c, const dnngraph_bench::PlanChoice& choice) {
  std::printf("%s (b %lld h_q %lld h_k %lld s_q %lld s_kv %lld d %lld%s%s%s%s): ", c.key,
              static_cast<long long>(kB), static_cast<long long>(kHq),
              static_cast<long long>(c.h_k), static_cast<long long>(c.s_q),
              static_cast<long long>(c.s_kv), static_cast<long long>(kD),
              c.causal ? ", causal" : "", c.len_q.empty() ? "" : ", padded",
              c.e5m2 ? ", gradients E5M2" : "", c.bshd ? ", BSHD" : "");
  fe::graph::Graph graph;
  make_graph(graph, c);
  if (!dnngraph_bench::build_and_print(graph, handle, choice)) {
    return false;
  }

  // The test's inputs: Q, K, V, dO drawn in this order; O and Stats the forward's.
  std::mt19937 rng(c.seed);
  const Fp8 q = random_fp8(c, true, false, kDescaleQ, rng);
  const Fp8 k = random_fp8(c, false, false, kDescaleK, rng);
  const Fp8 v = random_fp8(c, false, false, kDescaleV, rng);
  const Fp8 d_o = random_fp8(c, true, c.e5m2, kDescaleDo, rng);
  Reference r;
  forward(c, q, k, v, r);
  const Fp8 o = quantize(c, c.dims(true), false, kScaleO,
                         [&](std::size_t i) { return static_cast<float>(r.o[i]); });
  const std::vector<float> stats(r.stats.begin(), r.stats.end());
  backward(c, {&q, &k, &v, &o, &d_o}, stats, r);
  const float scale_dp = scale_for(c.e5m2, r.amax_ds);
  std::array<float, 3> scales{};
  for (std::size_t i = 0; i < 3; ++i) {
    scales.at(i) = scale_for(c.e5m2, largest_valid(c, i == 0, r.grads.at(i)));
  }
  const std::array<float, 12> factors{kDescaleQ,  kDescaleK,   kDescaleV,    1 / kScaleO,
                                      kDescaleDo, 1 / kScaleS, 1 / scale_dp, kScaleS,
                                      scales[0],  scales[1],   scales[2],    scale_dp};

  std::vector<std::unique_ptr<Device>> inputs;
  std::unordered_map<std::int64_t, void*> pack;
  const auto add = [&](std::int64_t uid, const auto& host) {
    pack[uid] = inputs.emplace_back(std::make_unique<Device>(host))->ptr;
  };
  add(kUidQ, q.bytes);
  add(kUidK, k.bytes);
  add(kUidV, v.bytes);
  add(kUidO, o.bytes);
  add(kUidDo, d_o.bytes);
  add(kUidStats, stats);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    add(kFirstFactorUid + static_cast<std::int64_t>(i), std::vector<float>{factors.at(i)});
  }
  if (!c.len_q.empty()) {
    add(kUidLenQ, c.len_q);
    add(kUidLenKv, c.len_kv);
  }
  std::vector<std::unique_ptr<Device>> outputs;
  for (std::size_t i = 0; i < kOutputNames.size(); ++i) {
    const std::size_t bytes = i < 3 ? r.grads.at(i).size() : sizeof(float);  // FP8: 1 B each
    const Device& out = *outputs.emplace_back(std::make_unique<Device>(bytes));
    if (!out.fill(0xFF)) {  // NaN in E4M3, E5M2 and Float, as the test fills them
      return false;
    }
    pack[kFirstOutputUid + static_cast<std::int64_t>(i)] = out.ptr;
  }
  if (const std::string error =
          dnngraph_bench::execute(graph, handle, pack, {}, choice.zero_workspace);
      !error.empty()) {
    std::printf("  %s\n", error.c_str());
    return false;
  }
  bool agrees = true;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto stored = outputs.at(i)->read<std::uint8_t>(r.grads.at(i).size());
    const float amax = outputs.at(3 + i)->read<float>(1)[0];
    agrees = check(c, i, stored, scales.at(i), amax, r.grads.at(i)) && agrees;
  }
  const float amax_dp = outputs.at(6)->read<float>(1)[0];
  const bool dp_agrees = std::abs(amax_dp - r.amax_ds) <= 0.25 * r.amax_ds;
  std::printf("  Amax_dP %.4g, reference max |dS| %.4g: %s\n", amax_dp, r.amax_ds,
              dp_agrees ? "agrees" : "DIFFERS");
  return agrees && dp_agrees;
}

}  // namespace

int main(int argc, char** argv) {
  return dnngraph_bench::run_cases(argc, argv, "gpu_sdpa_fp8_backward_test's graphs", kCases, run);
}
