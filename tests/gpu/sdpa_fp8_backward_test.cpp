// FP8 attention backward (sdpa_fp8_backward) on the GPU (cuDNN's FP8 engines need Hopper: the
// H200) against a CPU reference in double from the dequantized FP8 inputs
// (support/sdpa_fp8_reference.hpp, checked by finite differences on the CPU): b 2, h 4 (and
// grouped-query h_k 2), d 128 (what Hopper's FP8 backward takes), s 128 and 256, causal and not,
// a padding mask, BSHD memory, dO and the gradients in Fp8E4M3 and in Fp8E5M2. Checks dQ, dK,
// dV element by element and the four amax. A graph cuDNN has no engine for is a finding (skipped
// with the Error), never a pass.
//
// Inputs: Q, K, V, dO are FP8 numbers drawn uniformly from [-4, 4] (rounded to their format),
// their descales powers of two (Q, K: 1/2; V, dO: 1/4), so the dequantized inputs the reference
// reads are exact, as are their products in Float. O and Stats are the forward's, computed in
// double: O stored as E4M3(256 O) (descale_o 1/256), Stats as the Float nearest. scale_s = 256
// (descale_s 1/256): P <= 1 stays below E4M3's 448. scale_dP, scale_dQ, scale_dK, scale_dV are the
// largest powers of two that keep twice the reference's amax below the format's largest value
// (delayed scaling picks them from the last step's amax the same way), so nothing saturates and
// every scaling is exact.
//
// The tolerance, from the formats' mantissa bits m (E4M3 3, E5M2 2): a rounding moves a normal
// value by at most r = 2^-(m+1) of itself (2^-4, 2^-3) and a subnormal one by at most e, half the
// subnormal step (E4M3 2^-10, E5M2 2^-17).
// - The engine rounds one operand of each gradient's matmul to FP8: scale_s P for dV (Q's type,
//   E4M3), scale_dP dS for dQ and dK (dO's type). Each a_j moves by at most r |a_j| + e / scale,
//   so the sum C = sum_j a_j b_j by at most w = r sum_j |a_j| |b_j| + e / scale sum_j |b_j|
//   (the reference's `rounded` and `count` sums; b_j: dO for dV, K for dQ, Q for dK).
// - The gradient is then scaled and rounded to its own format (r_o, e_o): at most
//   r_o (|C| + w) + e_o / scale_out more.
// - Float arithmetic in the engine (products of the exact inputs are exact; sums of up to 256
//   terms, exp, the D subtraction) errs by ~1e-6 relative of the terms' magnitudes before
//   cancellation (the reference's `magnitude` sum): 1e-4 of it leaves 100x.
// So, with W = w + 1e-4 magnitude, |G - G_ref| <= W (1 + r_o) + r_o |G_ref| + e_o / scale_out
// + 1e-6 per element of the valid rows (query rows inside seq_len_q for dQ, key rows inside
// seq_len_kv for dK and dV). Amax_dQ, Amax_dK, Amax_dV are the amax before the output scale:
// within the largest W of the reference's, and (unpadded: rows past the lengths are undefined)
// rounding is monotonic, so FP8(scale Amax) equals the largest |G| written, exactly. Amax_dP is
// max |dS| in Float: within 1e-3 relative of the reference's. cudnn-frontend's own test
// (test/python/sdpa/fp8.py) allows atol 0.04, rtol 0.2 on the dequantized gradients; this bound
// is per element and usually much tighter.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
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
#include "support/sdpa_fp8_reference.hpp"
#include "support/sdpa_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::Graph;
using dnngraph::SdpaFp8BackwardAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Fp8Format;
using dnngraph::test::Fp8Tensor;
using dnngraph::test::GradientTerms;
using dnngraph::test::require_cuda;
using dnngraph::test::SdpaCase;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_d_o = 5, uid_stats = 6,
                       uid_len_q = 8, uid_len_kv = 9;
constexpr std::int64_t first_factor_uid = 11;  // the twelve, in sdpa_fp8_backward's order
constexpr std::int64_t first_output_uid = 30;  // dQ, dK, dV, Amax_dQ, Amax_dK, Amax_dV, Amax_dP
constexpr std::array<const char*, 12> factor_names{
    "descale_q",  "descale_k", "descale_v", "descale_o", "descale_dO", "descale_s",
    "descale_dP", "scale_s",   "scale_dQ",  "scale_dK",  "scale_dV",   "scale_dP"};
constexpr std::array<const char*, 7> output_names{"dQ",      "dK",      "dV",     "Amax_dQ",
                                                  "Amax_dK", "Amax_dV", "Amax_dP"};

// The fixed factors: powers of two, so that scaling is exact.
constexpr float descale_q = 0.5F, descale_k = 0.5F, descale_v = 0.25F, descale_d_o = 0.25F;
constexpr float scale_o = 256.0F, scale_s = 256.0F;

std::size_t n(std::int64_t x) { return static_cast<std::size_t>(x); }

// A case: the shape, masks and lengths of SdpaCase (Q, K, V, O Fp8E4M3, d 128), the type of dO
// and the gradients, and the memory layout.
struct BackwardCase {
  SdpaCase shape;
  DataType grad = DataType::Fp8E4M3;
  bool bshd = false;

  [[nodiscard]] std::string text() const {
    return shape.text() + ", gradients " + std::string(dnngraph::to_string(grad)) +
           (shape.causal ? ", causal" : "") + (shape.padded() ? ", padded" : "") +
           (bshd ? ", BSHD" : "");
  }
  [[nodiscard]] dnngraph::test::Fp8Layout layout() const { return {bshd}; }
  [[nodiscard]] Dims strides(const Dims& d) const { return layout().strides(d); }
};

Graph make_graph(const BackwardCase& bc) {
  const SdpaCase& c = bc.shape;
  Graph g = dnngraph::test::fp8_attention_graph(c.name);
  const auto [q, k, v] = dnngraph::test::qkv_inputs(g, bc.layout(), c);  // uids 1-3
  auto o = bc.layout().input(g, "O", uid_o, c.q_dims());
  auto d_o = bc.layout().input(g, "dO", uid_d_o, c.q_dims());
  d_o->set_data_type(bc.grad);
  auto stats = g.tensor(TensorAttributes()
                            .set_name("Stats")
                            .set_uid(uid_stats)
                            .set_dim({c.b, c.h_q, c.s_q, 1})
                            .set_data_type(DataType::Float));
  const auto f = dnngraph::test::factor_inputs(g, factor_names, first_factor_uid);
  SdpaFp8BackwardAttributes a;
  a.set_name("attn").set_attn_scale(c.scale());
  dnngraph::test::set_masks(c, g, a, uid_len_q, uid_len_kv);
  const auto out = g.sdpa_fp8_backward(q, k, v, o, d_o, stats, f[0], f[1], f[2], f[3], f[4], f[5],
                                       f[6], f[7], f[8], f[9], f[10], f[11], a);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out.at(i)
        ->set_name(output_names.at(i))
        .set_uid(first_output_uid + static_cast<std::int64_t>(i))
        .set_output(true);
  }
  out[0]->set_stride(bc.strides(c.q_dims()));
  out[1]->set_stride(bc.strides(c.kv_dims()));
  out[2]->set_stride(bc.strides(c.kv_dims()));
  return g;
}

// O = E4M3(scale_o O_ref) from the forward reference (0 in rows without output), dequantized.
Fp8Tensor quantized_o(const BackwardCase& bc, const dnngraph::test::SdpaExpected& forward) {
  const SdpaCase& c = bc.shape;
  Fp8Tensor t{std::vector<float>(forward.o.size()), std::vector<std::uint8_t>(forward.o.size())};
  for (std::size_t i = 0; i < forward.o.size(); ++i) {
    const double value = forward.row_valid[i / n(c.d)] ? forward.o[i] : 0.0;
    const std::uint8_t bits =
        dnngraph::test::fp8_bits(DataType::Fp8E4M3, static_cast<float>(value) * scale_o);
    t.real[i] = dnngraph::test::fp8_value(DataType::Fp8E4M3, bits) / scale_o;
    t.bytes[bc.layout().offset(c.q_dims(), i)] = bits;
  }
  return t;
}

// The largest power of two s with 2 * amax * s <= the format's largest value.
float scale_for(DataType type, double amax) {
  const double largest = Fp8Format::of(type).largest;
  return amax > 0 ? std::ldexp(1.0F, static_cast<int>(std::floor(std::log2(largest / (2 * amax)))))
                  : 1.0F;
}

// The inputs of one run, with the factors the reference's amax chose.
struct Inputs {
  Fp8Tensor q, k, v, o, d_o;
  std::vector<float> stats;
  std::array<float, 12> factors;  // in factor_names' order
};

struct Gradient {
  std::vector<float> values;  // dequantized (stored / scale), in [b, h, s, d] order
  float amax = 0;
  float largest_written = 0;  // max |stored| as the format's value
};
struct Outputs {
  std::array<Gradient, 3> gradients;  // dQ, dK, dV
  float amax_dp = 0;
};

Outputs run(const BackwardCase& bc, const Graph& g, const dnngraph::Handle& handle,
            std::int64_t workspace_size, const Inputs& in) {
  const SdpaCase& c = bc.shape;
  const auto upload = [](std::span<const std::uint8_t> bytes, const char* what) {
    return require_cuda(DeviceBuffer::copy_of(bytes), what);
  };
  DeviceBuffer q = upload(in.q.bytes, "Q");
  DeviceBuffer k = upload(in.k.bytes, "K");
  DeviceBuffer v = upload(in.v.bytes, "V");
  DeviceBuffer o = upload(in.o.bytes, "O");
  DeviceBuffer d_o = upload(in.d_o.bytes, "dO");
  DeviceBuffer stats = require_cuda(DeviceBuffer::copy_of(std::span(in.stats)), "Stats");
  const std::array<Dims, 3> dims{c.q_dims(), c.kv_dims(), c.kv_dims()};
  std::vector<DeviceBuffer> gradients;
  std::vector<DeviceBuffer> amax;
  for (const Dims& d : dims) {
    gradients.push_back(
        require_cuda(DeviceBuffer::allocate(dnngraph::test::element_count(d)), "gradient"));
  }
  for (int i = 0; i < 4; ++i) {
    amax.push_back(require_cuda(DeviceBuffer::allocate(sizeof(float)), "amax"));
  }
  for (DeviceBuffer& out : gradients) {
    require_cuda(out.fill_bytes(0xFF), "fill a gradient with NaN");  // E4M3 and E5M2 NaN
  }
  for (DeviceBuffer& out : amax) {
    require_cuda(out.fill_bytes(0xFF), "fill an amax with NaN");
  }
  const std::vector<DeviceBuffer> factor_buffers = dnngraph::test::factor_buffers(in.factors);
  const std::vector<std::int32_t> len_q = c.padded() ? c.len_q : std::vector<std::int32_t>{1};
  const std::vector<std::int32_t> len_kv = c.padded() ? c.len_kv : std::vector<std::int32_t>{1};
  DeviceBuffer len_q_dev = require_cuda(DeviceBuffer::copy_of(std::span(len_q)), "seq_len_q");
  DeviceBuffer len_kv_dev = require_cuda(DeviceBuffer::copy_of(std::span(len_kv)), "seq_len_kv");
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(workspace_size, 1))),
      "workspace");
  std::unordered_map<std::int64_t, void*> pack{{uid_q, q.get()},     {uid_k, k.get()},
                                               {uid_v, v.get()},     {uid_o, o.get()},
                                               {uid_d_o, d_o.get()}, {uid_stats, stats.get()}};
  for (std::size_t i = 0; i < factor_buffers.size(); ++i) {
    pack[first_factor_uid + static_cast<std::int64_t>(i)] = factor_buffers[i].get();
  }
  for (std::size_t i = 0; i < 3; ++i) {
    pack[first_output_uid + static_cast<std::int64_t>(i)] = gradients[i].get();
  }
  for (std::size_t i = 0; i < 4; ++i) {
    pack[first_output_uid + 3 + static_cast<std::int64_t>(i)] = amax[i].get();
  }
  if (c.padded()) {
    pack[uid_len_q] = len_q_dev.get();
    pack[uid_len_kv] = len_kv_dev.get();
  }
  const auto ran = g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), bc.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               bc.text() + " after execute");
  Outputs out;
  const std::array<float, 3> output_scales{in.factors[8], in.factors[9], in.factors[10]};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t count = dnngraph::test::element_count(dims.at(i));
    std::vector<std::uint8_t> bytes(count);
    require_cuda(gradients[i].download(std::span(bytes)), output_names.at(i));
    Gradient& grad = out.gradients.at(i);
    grad.values.resize(count);
    for (std::size_t e = 0; e < count; ++e) {
      const float stored =
          dnngraph::test::fp8_value(bc.grad, bytes[bc.layout().offset(dims.at(i), e)]);
      grad.values[e] = stored / output_scales.at(i);
      grad.largest_written = std::max(grad.largest_written, std::fabs(stored));
    }
    require_cuda(amax[i].download(std::span(&grad.amax, 1)), output_names.at(3 + i));
  }
  require_cuda(amax[3].download(std::span(&out.amax_dp, 1)), "Amax_dP");
  return out;
}

// One gradient against the reference within the per-element bound of the header comment.
struct Check {
  double worst_ratio = 0, max_abs_error = 0, max_w = 0, reference_amax = 0;
  std::size_t outside = 0, checked = 0;
};
struct Rounding {
  Fp8Format operand;  // the FP8 operand the engine rounds (P: E4M3; dS: dO's type)
  float operand_scale;
  Fp8Format out;
  float out_scale;
};
Check check_gradient(const Gradient& got, const GradientTerms& e, const std::vector<bool>& valid,
                     std::int64_t d, const Rounding& r) {
  Check c;
  const double r_o = r.out.relative_step();
  for (std::size_t i = 0; i < e.value.size(); ++i) {
    if (!valid[i / n(d)]) {
      continue;
    }
    const double w = r.operand.relative_step() * e.rounded[i] +
                     r.operand.subnormal_error() / r.operand_scale * e.count[i] +
                     1e-4 * e.magnitude[i];
    const double bound =
        w * (1 + r_o) + r_o * std::fabs(e.value[i]) + r.out.subnormal_error() / r.out_scale + 1e-6;
    const double error = std::fabs(static_cast<double>(got.values[i]) - e.value[i]);
    c.max_w = std::max(c.max_w, w);
    c.reference_amax = std::max(c.reference_amax, std::fabs(e.value[i]));
    c.max_abs_error = std::isfinite(error) ? std::max(c.max_abs_error, error) : HUGE_VAL;
    c.worst_ratio = std::isfinite(error) ? std::max(c.worst_ratio, error / bound) : HUGE_VAL;
    c.outside += error <= bound ? 0 : 1;
    ++c.checked;
  }
  return c;
}

double largest_valid(const GradientTerms& e, const std::vector<bool>& valid, std::int64_t d) {
  double largest = 0;
  for (std::size_t i = 0; i < e.value.size(); ++i) {
    largest = valid[i / n(d)] ? std::max(largest, std::fabs(e.value[i])) : largest;
  }
  return largest;
}

void check_against_reference(const BackwardCase& bc) {
  const SdpaCase& c = bc.shape;
  const auto taken = dnngraph::test::take_built_case(bc.text(), [bc] { return make_graph(bc); });
  dnngraph::test::BuiltCase& b = *taken.built;
  std::mt19937 rng(c.seed);
  const auto random = [&](DataType type, const Dims& dims, float descale) {
    return dnngraph::test::random_fp8(type, bc.layout(), dims, 4.0F, descale, rng);
  };
  Inputs in{random(DataType::Fp8E4M3, c.q_dims(), descale_q),
            random(DataType::Fp8E4M3, c.kv_dims(), descale_k),
            random(DataType::Fp8E4M3, c.kv_dims(), descale_v),
            {},
            random(bc.grad, c.q_dims(), descale_d_o),
            {},
            {}};
  const auto forward = dnngraph::test::sdpa_reference(c, in.q.real, in.k.real, in.v.real);
  in.o = quantized_o(bc, forward);
  in.stats.resize(forward.stats.size());
  for (std::size_t r = 0; r < forward.stats.size(); ++r) {
    in.stats[r] = forward.row_valid[r] ? static_cast<float>(forward.stats[r]) : 0.0F;
  }
  const auto e = dnngraph::test::sdpa_fp8_backward_reference(
      c, {in.q.real, in.k.real, in.v.real, in.o.real, in.d_o.real, in.stats});
  const float scale_dp = scale_for(bc.grad, e.amax_ds);
  const float scale_dq = scale_for(bc.grad, largest_valid(e.dq, e.q_row_valid, c.d));
  const float scale_dk = scale_for(bc.grad, largest_valid(e.dk, e.kv_row_valid, c.d));
  const float scale_dv = scale_for(bc.grad, largest_valid(e.dv, e.kv_row_valid, c.d));
  in.factors = {descale_q,       descale_k, descale_v, 1.0F / scale_o, descale_d_o, 1 / scale_s,
                1.0F / scale_dp, scale_s,   scale_dq,  scale_dk,       scale_dv,    scale_dp};
  const Outputs got = run(bc, b.graph, *b.handle, taken.workspace_size, in);

  const Fp8Format e4m3 = Fp8Format::of(DataType::Fp8E4M3);
  const Fp8Format grad = Fp8Format::of(bc.grad);
  const std::array<Check, 3> checks{
      check_gradient(got.gradients[0], e.dq, e.q_row_valid, c.d, {grad, scale_dp, grad, scale_dq}),
      check_gradient(got.gradients[1], e.dk, e.kv_row_valid, c.d, {grad, scale_dp, grad, scale_dk}),
      check_gradient(got.gradients[2], e.dv, e.kv_row_valid, c.d, {e4m3, scale_s, grad, scale_dv})};
  const std::array<float, 3> scales{scale_dq, scale_dk, scale_dv};
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Check& k = checks.at(i);
    const Gradient& g = got.gradients.at(i);
    const char* name = output_names.at(i);
    BOOST_TEST_MESSAGE(bc.text() << ": " << name << " max abs error " << k.max_abs_error
                                 << ", worst error / bound " << k.worst_ratio << " (largest w "
                                 << k.max_w << ", largest |" << name << "| " << k.reference_amax
                                 << "), " << k.outside << " of " << k.checked << " outside; Amax "
                                 << g.amax << " (reference " << k.reference_amax << ")");
    BOOST_CHECK_MESSAGE(k.outside == 0 && k.checked > 0,
                        bc.text() << ": " << name << ": " << k.outside << " of " << k.checked
                                  << " elements outside the bound, worst error / bound "
                                  << k.worst_ratio);
    BOOST_CHECK_MESSAGE(std::fabs(g.amax - k.reference_amax) <= k.max_w + 1e-6,
                        bc.text() << ": " << output_names.at(3 + i) << " " << g.amax
                                  << ", reference " << k.reference_amax << ", bound " << k.max_w);
    if (!c.padded()) {  // rows past the lengths are undefined and may be in the GPU's amax
      const float rounded = dnngraph::test::round_to_fp8(bc.grad, g.amax * scales.at(i));
      BOOST_CHECK_MESSAGE(rounded == g.largest_written,
                          bc.text() << ": FP8(scale " << output_names.at(3 + i) << ") = " << rounded
                                    << ", but the largest |" << name << "| written is "
                                    << g.largest_written);
    }
  }
  BOOST_TEST_MESSAGE(bc.text() << ": Amax_dP " << got.amax_dp << " (reference max |dS| "
                               << e.amax_ds << "), scales dP " << scale_dp << " dQ " << scale_dq
                               << " dK " << scale_dk << " dV " << scale_dv);
  BOOST_CHECK_MESSAGE(
      std::fabs(got.amax_dp - e.amax_ds) <= 1e-3 * e.amax_ds + 1e-6,
      bc.text() << ": Amax_dP " << got.amax_dp << ", reference max |dS| " << e.amax_ds);
}

boost::unit_test::precondition builds(const BackwardCase& bc) {
  return dnngraph::test::builds_or_skips(bc.text(), [bc] { return make_graph(bc); });
}

SdpaCase shape(const char* name, std::int64_t h_k, std::int64_t s_q, std::int64_t s_kv, bool causal,
               std::uint32_t seed) {
  SdpaCase c;
  c.name = name;
  c.type = DataType::Fp8E4M3;
  c.b = 2;
  c.h_q = 4;
  c.h_k = h_k;
  c.s_q = s_q;
  c.s_kv = s_kv;
  c.d = 128;
  c.causal = causal ? std::optional(DiagonalAlignment::TopLeft) : std::nullopt;
  c.seed = seed;
  return c;
}

namespace cases {
const BackwardCase plain{shape("fp8 backward", 4, 128, 128, false, 901)};
const BackwardCase causal{shape("fp8 backward", 4, 256, 256, true, 902)};
const BackwardCase gqa_causal{shape("fp8 backward gqa", 2, 128, 256, true, 903)};
const BackwardCase e5m2_causal{shape("fp8 backward", 4, 256, 256, true, 904), DataType::Fp8E5M2};
const BackwardCase gqa_bshd_e5m2{shape("fp8 backward gqa", 2, 256, 256, false, 905),
                                 DataType::Fp8E5M2, true};
BackwardCase padded() {
  BackwardCase bc{shape("fp8 backward padded", 4, 256, 256, true, 906)};
  bc.shape.len_q = {256, 131};
  bc.shape.len_kv = {200, 97};
  return bc;
}
const BackwardCase padded_causal = padded();
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_fp8_backward)
DNNGRAPH_REFERENCE_CASE(without_a_mask_the_gradients_match_the_reference, cases::plain)
DNNGRAPH_REFERENCE_CASE(a_causal_mask_at_256_matches, cases::causal)
DNNGRAPH_REFERENCE_CASE(grouped_query_causal_with_longer_keys_matches, cases::gqa_causal)
DNNGRAPH_REFERENCE_CASE(e5m2_do_and_gradients_match, cases::e5m2_causal)
DNNGRAPH_REFERENCE_CASE(grouped_query_in_bshd_memory_with_e5m2_gradients_matches,
                        cases::gqa_bshd_e5m2)
DNNGRAPH_REFERENCE_CASE(a_padding_mask_with_per_batch_lengths_matches, cases::padded_causal)
BOOST_AUTO_TEST_SUITE_END()
