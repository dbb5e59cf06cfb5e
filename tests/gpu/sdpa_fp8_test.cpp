// FP8 attention forward (sdpa_fp8) on the GPU (cuDNN's FP8 engines need Hopper: the H200)
// against a CPU reference in double from the dequantized FP8 inputs: b 2, h 4 (and grouped-query
// h_k 2), s 128 to 512, d 64 and 128, causal and not, inference and training (Stats), BHSD and
// BSHD memory, a padding mask. Checks O, Stats, Amax_O (exactly against the GPU's own O, and
// within the bound of P's rounding against the reference) and Amax_S. A graph cuDNN has no engine
// for is a finding (skipped with the Error), never a pass.
//
// Inputs: every value stored in Q, K, V is an E4M3 number drawn uniformly from [-4, 4] (rounded
// to E4M3), and the descales are powers of two (Q, K: 1/2; V: 1/4), so the dequantized inputs the
// reference reads (Q, K in [-2, 2], V in [-1, 1]) are exact, as are Q K^T's products. Scores of
// standard deviation ~5 make the softmax peaked: a row's O is ~ the values of a few keys, so a
// wrong mask, head mapping or missing factor moves O by O(0.1-1).
//
// The tolerance, from E4M3's 3 mantissa bits (a rounding moves a normal value by at most
// 2^-4 of itself; below 2^-6 the spacing is 2^-9, an absolute error of at most 2^-10):
// - P: the engine rounds scale_s p_j (normalized or relative to a running row max, which only
//   rescales each row) to E4M3, so each p_j moves by at most 2^-4 p_j + 2^-10 / scale_s, and
//   O~ = sum_j p_j v_j by at most w = 2^-4 sum_j p_j |v_j| + s_kv 2^-10 / scale_s max|v|.
//   scale_s = 256 (1/256 back): the largest P, at most 1, stays below E4M3's 448.
// - O: scale_o O~ rounded to E4M3, at most 2^-4 |O~| + 2^-10 / scale_o; scale_o = 256 keeps
//   |O~| <= 1 below 448.
// So |O - O_ref| <= w (1 + 2^-4) + 2^-4 |O_ref| + 2^-10 / scale_o per element, plus 1e-5 for
// Float accumulation and the engine's exp (relative errors ~1e-6). w comes from a second
// reference pass with |V|. Stats (Float log-sum-exp of exact scores, |Stats| < 40) carry only
// Float rounding (~1e-4 over d 128 products) and exp/log approximations: 2e-3 absolute.
// Amax_O = max |O~| before scale_o: rounding is monotonic, so E4M3(scale_o Amax_O) must equal
// the largest |O| the GPU wrote, exactly (unpadded cases); against the reference it is within
// max w. Amax_S = max p over the valid rows (P before scale_s, Float): within 1e-3 relative.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/fp8_attention.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::Graph;
using dnngraph::SdpaFp8Attributes;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Fp8Tensor;
using dnngraph::test::require_cuda;
using dnngraph::test::SdpaCase;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_stats = 5, uid_amax_s = 6,
                       uid_amax_o = 7, uid_len_q = 8, uid_len_kv = 9;
constexpr std::int64_t first_factor_uid = 11;  // descale_q, _k, _v, _s, scale_s, scale_o

// The factors: powers of two, so that scaling is exact.
constexpr float descale_q = 0.5F, descale_k = 0.5F, descale_v = 0.25F;
constexpr float scale_s = 256.0F, scale_o = 256.0F;
constexpr std::array<float, 6> factors{descale_q,      descale_k, descale_v,
                                       1.0F / scale_s, scale_s,   scale_o};
constexpr std::array<const char*, 6> factor_names{"descale_q", "descale_k", "descale_v",
                                                  "descale_s", "scale_s",   "scale_o"};
constexpr double e4m3_step = 0.0625;                 // 2^-4: a normal rounding, relative
constexpr double e4m3_subnormal_error = 1.0 / 1024;  // 2^-10: a subnormal rounding, absolute

float e4m3_value(std::uint8_t bits) { return dnngraph::test::fp8_value(DataType::Fp8E4M3, bits); }
std::uint8_t e4m3_bits(float v) { return dnngraph::test::fp8_bits(DataType::Fp8E4M3, v); }

// A case: the shape, masks and lengths of SdpaCase (its type Fp8E4M3), the memory layout and how
// large the stored Q values are (a small Q gives a flat softmax).
struct Fp8Case {
  SdpaCase shape;
  bool bshd = false;
  float q_range = 4.0F;

  [[nodiscard]] std::string text() const {
    return shape.text() + (shape.causal ? ", causal" : "") + (shape.stats ? ", training" : "") +
           (shape.padded() ? ", padded" : "") + (bshd ? ", BSHD" : "");
  }
  [[nodiscard]] dnngraph::test::Fp8Layout layout() const { return {bshd}; }
  [[nodiscard]] Dims strides(const Dims& d) const { return layout().strides(d); }
};

Graph make_graph(const Fp8Case& fc) {
  const SdpaCase& c = fc.shape;
  Graph g = dnngraph::test::fp8_attention_graph(c.name);
  const auto [q, k, v] = dnngraph::test::qkv_inputs(g, fc.layout(), c);  // uids 1-3
  const auto f = dnngraph::test::factor_inputs(g, factor_names, first_factor_uid);
  SdpaFp8Attributes a;
  a.set_name("attn").set_attn_scale(c.scale()).set_generate_stats(c.stats);
  dnngraph::test::set_masks(c, g, a, uid_len_q, uid_len_kv);
  auto [o, stats, amax_s, amax_o] = g.sdpa_fp8(q, k, v, f[0], f[1], f[2], f[3], f[4], f[5], a);
  o->set_name("O").set_uid(uid_o).set_output(true).set_stride(fc.strides(c.q_dims()));
  if (stats) {
    stats->set_name("Stats").set_uid(uid_stats).set_output(true);
  }
  amax_s->set_name("Amax_S").set_uid(uid_amax_s).set_output(true);
  amax_o->set_name("Amax_O").set_uid(uid_amax_o).set_output(true);
  return g;
}

struct Outputs {
  std::vector<float> o;  // dequantized (O / scale_o), in [b, h, s, d] order
  std::vector<float> stats;
  float amax_s = 0, amax_o = 0, largest_o_written = 0;  // the last: max |O| as E4M3 stored
};

Outputs run(const Fp8Case& fc, const Graph& g, const dnngraph::Handle& handle,
            std::int64_t workspace_size, const std::array<const Fp8Tensor*, 3>& qkv) {
  const SdpaCase& c = fc.shape;
  const std::size_t o_count = dnngraph::test::element_count(c.q_dims());
  const auto rows = static_cast<std::size_t>(c.b * c.h_q * c.s_q);
  DeviceBuffer q = require_cuda(DeviceBuffer::copy_of(std::span(qkv[0]->bytes)), "Q");
  DeviceBuffer k = require_cuda(DeviceBuffer::copy_of(std::span(qkv[1]->bytes)), "K");
  DeviceBuffer v = require_cuda(DeviceBuffer::copy_of(std::span(qkv[2]->bytes)), "V");
  DeviceBuffer o = require_cuda(DeviceBuffer::allocate(o_count), "O");
  DeviceBuffer stats = require_cuda(DeviceBuffer::allocate(rows * sizeof(float)), "Stats");
  DeviceBuffer amax_s = require_cuda(DeviceBuffer::allocate(sizeof(float)), "Amax_S");
  DeviceBuffer amax_o = require_cuda(DeviceBuffer::allocate(sizeof(float)), "Amax_O");
  for (DeviceBuffer* out : {&o, &stats, &amax_s, &amax_o}) {
    require_cuda(out->fill_bytes(0xFF), "fill an output with NaN");  // E4M3 and Float NaN
  }
  const std::vector<DeviceBuffer> factor_buffers = dnngraph::test::factor_buffers(factors);
  const std::vector<std::int32_t> len_q = c.padded() ? c.len_q : std::vector<std::int32_t>{1};
  const std::vector<std::int32_t> len_kv = c.padded() ? c.len_kv : std::vector<std::int32_t>{1};
  DeviceBuffer len_q_dev = require_cuda(DeviceBuffer::copy_of(std::span(len_q)), "seq_len_q");
  DeviceBuffer len_kv_dev = require_cuda(DeviceBuffer::copy_of(std::span(len_kv)), "seq_len_kv");
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(workspace_size, 1))),
      "workspace");
  std::unordered_map<std::int64_t, void*> pack{
      {uid_q, q.get()}, {uid_k, k.get()},           {uid_v, v.get()},
      {uid_o, o.get()}, {uid_amax_s, amax_s.get()}, {uid_amax_o, amax_o.get()}};
  for (std::size_t i = 0; i < factor_buffers.size(); ++i) {
    pack[first_factor_uid + static_cast<std::int64_t>(i)] = factor_buffers[i].get();
  }
  if (c.stats) {
    pack[uid_stats] = stats.get();
  }
  if (c.padded()) {
    pack[uid_len_q] = len_q_dev.get();
    pack[uid_len_kv] = len_kv_dev.get();
  }
  const auto ran = g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), fc.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               fc.text() + " after execute");
  std::vector<std::uint8_t> o_bytes(o_count);
  Outputs out{std::vector<float>(o_count), std::vector<float>(rows), 0, 0, 0};
  require_cuda(o.download(std::span(o_bytes)), "O");
  require_cuda(stats.download(std::span(out.stats)), "Stats");
  require_cuda(amax_s.download(std::span(&out.amax_s, 1)), "Amax_S");
  require_cuda(amax_o.download(std::span(&out.amax_o, 1)), "Amax_O");
  for (std::size_t i = 0; i < o_count; ++i) {
    const float stored = e4m3_value(o_bytes[fc.layout().offset(c.q_dims(), i)]);
    out.o[i] = stored / scale_o;
    out.largest_o_written = std::max(out.largest_o_written, std::fabs(stored));
  }
  return out;
}

// O against the reference within the per-element bound of the header comment; returns the
// largest error / bound (<= 1 passes) and counts the elements outside it.
struct OCheck {
  double worst_ratio = 0, max_abs_error = 0, max_w = 0;
  std::size_t outside = 0, checked = 0;
};
OCheck check_o(const SdpaCase& c, const Outputs& got, const dnngraph::test::SdpaExpected& e,
               const dnngraph::test::SdpaExpected& weights) {
  const auto d = static_cast<std::size_t>(c.d);
  const double subnormal = static_cast<double>(c.s_kv) * e4m3_subnormal_error / scale_s;
  OCheck r;
  for (std::size_t i = 0; i < e.o.size(); ++i) {
    if (!e.row_valid[i / d]) {
      continue;
    }
    const double w = e4m3_step * weights.o[i] + subnormal;  // max |v| <= 1
    const double bound =
        w * (1 + e4m3_step) + e4m3_step * std::fabs(e.o[i]) + e4m3_subnormal_error / scale_o + 1e-5;
    const double error = std::fabs(static_cast<double>(got.o[i]) - e.o[i]);
    r.max_w = std::max(r.max_w, w);
    r.max_abs_error = std::isfinite(error) ? std::max(r.max_abs_error, error) : r.max_abs_error;
    r.worst_ratio = std::isfinite(error) ? std::max(r.worst_ratio, error / bound) : HUGE_VAL;
    r.outside += error <= bound ? 0 : 1;
    ++r.checked;
  }
  return r;
}

void check_against_reference(const Fp8Case& fc) {
  const SdpaCase& c = fc.shape;
  const auto taken = dnngraph::test::take_built_case(fc.text(), [fc] { return make_graph(fc); });
  dnngraph::test::BuiltCase& b = *taken.built;
  std::mt19937 rng(c.seed);
  const auto random_e4m3 = [&](const Dims& dims, float range, float descale) {
    return dnngraph::test::random_fp8(DataType::Fp8E4M3, fc.layout(), dims, range, descale, rng);
  };
  const Fp8Tensor q = random_e4m3(c.q_dims(), fc.q_range, descale_q);
  const Fp8Tensor k = random_e4m3(c.kv_dims(), 4.0F, descale_k);
  const Fp8Tensor v = random_e4m3(c.kv_dims(), 4.0F, descale_v);
  std::vector<float> v_abs(v.real.size());
  std::ranges::transform(v.real, v_abs.begin(), [](float x) { return std::fabs(x); });
  const auto e = dnngraph::test::sdpa_reference(c, q.real, k.real, v.real);
  const auto weights = dnngraph::test::sdpa_reference(c, q.real, k.real, v_abs);  // sum p |v|
  const Outputs got = run(fc, b.graph, *b.handle, taken.workspace_size, {&q, &k, &v});

  const OCheck o = check_o(c, got, e, weights);
  BOOST_TEST_MESSAGE(fc.text() << ": O max abs error " << o.max_abs_error
                               << ", worst error / bound " << o.worst_ratio
                               << " (largest P rounding bound w " << o.max_w << "), " << o.outside
                               << " of " << o.checked << " outside");
  BOOST_CHECK_MESSAGE(o.outside == 0 && o.checked > 0,
                      fc.text() << ": O: " << o.outside << " of " << o.checked
                                << " elements outside the bound, worst error / bound "
                                << o.worst_ratio);
  if (c.stats) {
    const auto stats = dnngraph::test::compare(
        dnngraph::test::valid_rows(std::span<const float>(got.stats), e.row_valid, 1),
        dnngraph::test::valid_rows(std::span<const double>(e.stats), e.row_valid, 1),
        {.abs = 2e-3, .rel = 1e-4});
    BOOST_CHECK_MESSAGE(stats.passed(), fc.text() << ": Stats: " << stats.describe());
  }
  double largest_o = 0;
  double largest_p = 0;
  for (std::size_t i = 0; i < e.o.size(); ++i) {
    largest_o = e.row_valid[i / static_cast<std::size_t>(c.d)]
                    ? std::max(largest_o, std::fabs(e.o[i]))
                    : largest_o;
  }
  for (std::size_t r = 0; r < e.p_max.size(); ++r) {
    largest_p = e.row_valid[r] ? std::max(largest_p, e.p_max[r]) : largest_p;
  }
  BOOST_TEST_MESSAGE(fc.text() << ": Amax_O " << got.amax_o << " (reference " << largest_o
                               << "), Amax_S " << got.amax_s << " (reference " << largest_p << ")");
  BOOST_CHECK_MESSAGE(std::fabs(got.amax_o - largest_o) <= o.max_w + 1e-5,
                      fc.text() << ": Amax_O " << got.amax_o << ", reference " << largest_o
                                << ", bound " << o.max_w);
  if (!c.padded()) {  // rows past seq_len_q are undefined and may be in the GPU's amax
    const float rounded = e4m3_value(e4m3_bits(got.amax_o * scale_o));
    BOOST_CHECK_MESSAGE(rounded == got.largest_o_written,
                        fc.text() << ": E4M3(scale_o Amax_O) = " << rounded
                                  << ", but the largest |O| written is " << got.largest_o_written);
  }
  BOOST_CHECK_MESSAGE(
      std::fabs(got.amax_s - largest_p) <= 1e-3 * largest_p,
      fc.text() << ": Amax_S " << got.amax_s << ", reference (largest P) " << largest_p);
}

boost::unit_test::precondition builds(const Fp8Case& fc) {
  return dnngraph::test::builds_or_skips(fc.text(), [fc] { return make_graph(fc); });
}

SdpaCase shape(const char* name, std::int64_t h_k, std::int64_t s_q, std::int64_t s_kv,
               std::int64_t d, bool causal, bool stats, std::uint32_t seed) {
  SdpaCase c;
  c.name = name;
  c.type = DataType::Fp8E4M3;
  c.b = 2;
  c.h_q = 4;
  c.h_k = h_k;
  c.s_q = s_q;
  c.s_kv = s_kv;
  c.d = d;
  c.causal = causal ? std::optional(DiagonalAlignment::TopLeft) : std::nullopt;
  c.stats = stats;
  c.seed = seed;
  return c;
}

namespace cases {
const Fp8Case inference{shape("fp8 sdpa", 4, 128, 128, 64, false, false, 801)};
const Fp8Case causal_training{shape("fp8 sdpa", 4, 256, 256, 128, true, true, 802)};
const Fp8Case gqa_causal_training{shape("fp8 sdpa gqa", 2, 256, 512, 64, true, true, 803)};
const Fp8Case gqa_bshd{shape("fp8 sdpa gqa", 2, 512, 512, 128, false, false, 804), true};
const Fp8Case flat_softmax{shape("fp8 sdpa flat", 4, 128, 256, 64, false, true, 805), false, 0.25F};
Fp8Case padded() {
  Fp8Case fc{shape("fp8 sdpa padded", 4, 256, 256, 64, true, true, 806)};
  fc.shape.len_q = {256, 131};
  fc.shape.len_kv = {200, 97};
  return fc;
}
const Fp8Case padded_training = padded();
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_fp8)
DNNGRAPH_REFERENCE_CASE(inference_matches_the_reference, cases::inference)
DNNGRAPH_REFERENCE_CASE(causal_training_with_head_dim_128_matches, cases::causal_training)
DNNGRAPH_REFERENCE_CASE(grouped_query_causal_training_with_longer_keys_matches,
                        cases::gqa_causal_training)
DNNGRAPH_REFERENCE_CASE(grouped_query_in_bshd_memory_at_512_matches, cases::gqa_bshd)
DNNGRAPH_REFERENCE_CASE(a_flat_softmax_reports_its_largest_probability_as_amax_s,
                        cases::flat_softmax)
DNNGRAPH_REFERENCE_CASE(a_padding_mask_with_per_batch_lengths_matches, cases::padded_training)
BOOST_AUTO_TEST_SUITE_END()
