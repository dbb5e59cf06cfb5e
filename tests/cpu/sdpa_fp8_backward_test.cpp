// FP8 attention backward (sdpa_fp8_backward) without a GPU: the node lowers to the composite
// pattern cuDNN's fused FP8 flash-attention backward engine matches (D from dO * O; Q K^T, scale,
// descales, masks, minus Stats, exp; dV's FP8 matmul; dO V^T, descales, dS, its amax and scale_dP;
// dQ's and dK's FP8 matmuls) as finalized cuDNN descriptors in cudnn-frontend's order; it infers
// dQ, dK, dV (dO's FP8 type) and the four amax; and validate() refuses what cuDNN's FP8 backward
// on Hopper does not take, each with its ErrorCode and a message naming the node, the tensor and
// the values.
#define BOOST_TEST_MODULE sdpa_fp8_backward
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"
#include "support/validation_checks.hpp"

using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::SdpaFp8BackwardAttributes;
using dnngraph::TensorAttributes;
using TensorPtr = std::shared_ptr<TensorAttributes>;
using namespace dnngraph::test;

namespace {

using Dims = std::vector<std::int64_t>;
using Names = OperationNames;

struct Shape {
  std::int64_t b = 2, h_q = 4, h_k = 4, s_q = 128, s_kv = 256, d = 128, d_v = 128;
};

// An FP8 graph (io type Fp8E4M3) with Q, K, V (uids 1-3, packed BHSD) of `s`, the forward's O
// (4, Fp8E4M3), dO (5, Fp8E4M3) and Stats (6, Float), and the twelve factors (uids 11-22, Float
// [1, 1, 1, 1]); run() adds the node and names dQ, dK, dV (30-32) and the four amax (33-36).
struct Fp8Backward {
  Graph g;
  TensorPtr q, k, v, o, d_o, stats, seq_q, seq_kv;
  std::array<TensorPtr, 12> factor;
  std::array<TensorPtr, 7> out;  // dQ, dK, dV, Amax_dQ, Amax_dK, Amax_dV, Amax_dP
  // The factors by name, in sdpa_fp8_backward's order.
  static constexpr std::array<const char*, 12> factor_names{
      "descale_q",  "descale_k", "descale_v", "descale_o", "descale_dO", "descale_s",
      "descale_dP", "scale_s",   "scale_dQ",  "scale_dK",  "scale_dV",   "scale_dP"};
  static constexpr std::array<const char*, 7> output_names{
      "dQ", "dK", "dV", "Amax_dQ", "Amax_dK", "Amax_dV", "Amax_dP"};

  explicit Fp8Backward(const Shape& s = {}) {
    g.set_io_data_type(DataType::Fp8E4M3).set_compute_data_type(DataType::Float);
    q = g.tensor(tensor("Q", 1, {s.b, s.h_q, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h_k, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h_k, s.s_kv, s.d_v}));
    o = g.tensor(tensor("O", 4, {s.b, s.h_q, s.s_q, s.d_v}));
    d_o = g.tensor(tensor("dO", 5, {s.b, s.h_q, s.s_q, s.d_v}));
    stats = g.tensor(tensor("Stats", 6, {s.b, s.h_q, s.s_q, 1}).set_data_type(DataType::Float));
    for (std::size_t i = 0; i < factor.size(); ++i) {
      factor.at(i) =
          g.tensor(tensor(factor_names.at(i), 11 + static_cast<std::int64_t>(i), {1, 1, 1, 1})
                       .set_data_type(DataType::Float));
    }
  }
  void add_lengths(std::int64_t b) {
    seq_q = g.tensor(tensor("seq_q", 8, {b, 1, 1, 1}).set_data_type(DataType::Int32));
    seq_kv = g.tensor(tensor("seq_kv", 9, {b, 1, 1, 1}).set_data_type(DataType::Int32));
  }
  void run(SdpaFp8BackwardAttributes attributes) {
    const auto& f = factor;
    out = g.sdpa_fp8_backward(q, k, v, o, d_o, stats, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                              f[7], f[8], f[9], f[10], f[11], attributes.set_name("attn"));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out.at(i)->set_name(output_names.at(i)).set_uid(30 + static_cast<std::int64_t>(i));
      out.at(i)->set_output(true);
    }
  }
  [[nodiscard]] const TensorPtr& dq() const { return out[0]; }
  [[nodiscard]] const TensorPtr& dk() const { return out[1]; }
  [[nodiscard]] const TensorPtr& dv() const { return out[2]; }
};

const std::string matmul = "OperationMatmul";
const std::string pointwise = "OperationPointwise";
const std::string reduction = "OperationReduction";
const std::string reshape = "OperationReshape";

// dO * O, its row sums, descale_dO, descale_O: D.
const Names d_sum{pointwise, reduction, pointwise, pointwise};
// A gradient's FP8 matmul: the matmul (and with grouped-query attention the sum over each group),
// descale A, descale B, the scale, the amax.
Names fp8_matmul(bool grouped) {
  Names names{matmul};
  if (grouped) {
    names.push_back(reduction);
  }
  names.insert(names.end(), {pointwise, pointwise, pointwise, reduction});
  return names;
}
// After the scores and masks: minus Stats, exp (P), scale_s, P^T, dV's matmul, dO V^T, descale_dO,
// descale_v, minus D, times P, [the attention scale,] amax of dS, scale_dP, K from K^T, dQ's
// matmul, dS^T, dK's matmul.
Names gradients(bool scaled, bool grouped) {
  Names ds{matmul, pointwise, pointwise, pointwise, pointwise};
  if (scaled) {
    ds.push_back(pointwise);
  }
  return concat({{pointwise, pointwise, pointwise, reshape},
                 fp8_matmul(grouped),
                 ds,
                 {reduction, pointwise, reshape},
                 fp8_matmul(false),
                 {reshape},
                 fp8_matmul(grouped)});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_fp8_backward_lowering)

BOOST_AUTO_TEST_CASE(it_lowers_to_the_fp8_backward_pattern_in_cudnn_frontends_order) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // D; Q K^T, descale_q, descale_k; the gradients.
  const Names expected = concat({d_sum, {matmul, pointwise, pointwise}, gradients(false, false)});
  BOOST_TEST(s.backend_operations == expected, "got " << joined(s.backend_operations));
  BOOST_TEST(s.backend_operations.size() == 35U);
  BOOST_TEST(s.operations == (Names{"sdpa_fp8_backward 'attn'"}));
}

BOOST_AUTO_TEST_CASE(with_scale_causal_padding_and_grouped_query_it_lowers) {
  Fp8Backward a({.b = 3, .h_q = 8, .h_k = 2, .s_q = 256, .s_kv = 256});
  a.add_lengths(3);
  a.run(SdpaFp8BackwardAttributes()
            .set_attn_scale(0.088F)
            .set_causal_mask(true)
            .set_padding_mask(true)
            .set_seq_len_q(a.seq_q)
            .set_seq_len_kv(a.seq_kv));
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // D; Q K^T, scale, descale_q, descale_k; padding: row and column index, two compares, and,
  // select; causal: row and column index, compare, select; the gradients, dK and dV summed over
  // each group of query heads, dS times the attention scale.
  const Names expected = concat({d_sum,
                                 {matmul, pointwise, pointwise, pointwise},
                                 Names(6, pointwise),
                                 Names(4, pointwise),
                                 gradients(true, true)});
  BOOST_TEST(s.backend_operations == expected, "got " << joined(s.backend_operations));
  BOOST_TEST(s.backend_operations.size() == 49U);
  BOOST_TEST(a.dk()->dim() == (Dims{3, 2, 256, 128}));
  BOOST_TEST(a.dv()->dim() == (Dims{3, 2, 256, 128}));
}

BOOST_AUTO_TEST_CASE(the_gradients_take_dos_fp8_type_and_the_amax_are_one_float_each) {
  Fp8Backward a;
  a.d_o->set_data_type(DataType::Fp8E5M2);
  a.run(SdpaFp8BackwardAttributes());
  require_valid(a.g);
  BOOST_TEST(a.dq()->dim() == (Dims{2, 4, 128, 128}));
  BOOST_TEST(a.dk()->dim() == (Dims{2, 4, 256, 128}));
  BOOST_TEST(a.dk()->stride() == (Dims{131072, 32768, 128, 1}));
  for (const TensorPtr& gradient : {a.dq(), a.dk(), a.dv()}) {
    BOOST_TEST((gradient->data_type() == DataType::Fp8E5M2));
  }
  for (std::size_t i = 3; i < a.out.size(); ++i) {
    BOOST_TEST(a.out.at(i)->dim() == (Dims{1, 1, 1, 1}));
    BOOST_TEST((a.out.at(i)->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(a_gradient_may_take_the_other_fp8_type_and_bshd_strides) {
  Fp8Backward a;
  for (const TensorPtr& t : {a.q, a.k, a.v, a.o, a.d_o}) {
    const Dims& d = t->dim();
    t->set_stride({d[2] * d[1] * d[3], d[3], d[1] * d[3], 1});
  }
  a.run(SdpaFp8BackwardAttributes().set_causal_mask(true));
  a.dq()->set_data_type(DataType::Fp8E5M2).set_stride({65536, 128, 512, 1});
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST((a.dq()->data_type() == DataType::Fp8E5M2));
  BOOST_TEST((a.dk()->data_type() == DataType::Fp8E4M3));
  BOOST_TEST(a.dq()->stride() == (Dims{65536, 128, 512, 1}));
}

BOOST_AUTO_TEST_CASE(the_node_validates_where_the_loaded_cudnn_offers_the_fp8_backward) {
  // TransformerEngine serves the FP8 backward at any length and with padding masks from 9.7 (and
  // cudnn-frontend from 9.1); every cuDNN dnngraph runs on (9.19 and newer) has it, so the
  // refusal below 9.7 cannot be reached here.
  BOOST_TEST(dnngraph::cudnn_version_needed(dnngraph::CudnnCapability::Fp8AttentionBackward) ==
             90700);
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  validates_where_offered(a.g, dnngraph::CudnnCapability::Fp8AttentionBackward,
                          "needs cuDNN >= 9.7.0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_fp8_backward_validation)

BOOST_AUTO_TEST_CASE(bfloat16_inputs_are_rejected) {
  Fp8Backward a;
  for (const TensorPtr& t : {a.q, a.k, a.v}) {
    t->set_data_type(DataType::BFloat16);
  }
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"sdpa_fp8_backward 'attn': Q 'Q' (uid 1) has data type BFloat16; the FP8 "
           "attention backward takes Fp8E4M3 Q, K and V"});
}

BOOST_AUTO_TEST_CASE(an_e5m2_k_is_rejected) {
  Fp8Backward a;
  a.k->set_data_type(DataType::Fp8E5M2);
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType, {"K 'K' (uid 2) has data type Fp8E5M2"});
}

BOOST_AUTO_TEST_CASE(a_head_dim_other_than_128_is_rejected) {
  Fp8Backward a({.d = 64, .d_v = 128});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::InvalidAttribute,
          {"sdpa_fp8_backward 'attn': the head dim of Q and K is 64; cuDNN's FP8 "
           "attention backward engines on Hopper take 128 only"});
}

BOOST_AUTO_TEST_CASE(a_value_head_dim_other_than_128_is_rejected) {
  Fp8Backward a({.d = 128, .d_v = 64});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::InvalidAttribute, {"the head dim of V is 64"});
}

BOOST_AUTO_TEST_CASE(kv_heads_that_do_not_divide_q_heads_are_rejected) {
  Fp8Backward a({.h_q = 4, .h_k = 3});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ShapeMismatch, {"K has 3 heads, which does not divide Q's 4"});
}

BOOST_AUTO_TEST_CASE(an_o_of_other_dims_is_rejected) {
  Fp8Backward a;
  a.o->set_dim({2, 4, 64, 128});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ShapeMismatch,
          {"O 'O' (uid 4) has dims [2, 4, 64, 128], expected [2, 4, 128, 128] (the "
           "forward's O: [b, h_q, s_q, d_v])"});
}

BOOST_AUTO_TEST_CASE(an_o_in_e5m2_is_rejected) {
  Fp8Backward a;
  a.o->set_data_type(DataType::Fp8E5M2);
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"O 'O' (uid 4) has data type Fp8E5M2; O is the forward's output, Fp8E4M3"});
}

BOOST_AUTO_TEST_CASE(a_bfloat16_do_is_rejected) {
  Fp8Backward a;
  a.d_o->set_data_type(DataType::BFloat16);
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"dO 'dO' (uid 5) has data type BFloat16; the FP8 attention backward takes "
           "dO in Fp8E4M3 or Fp8E5M2"});
}

BOOST_AUTO_TEST_CASE(a_do_whose_head_dim_is_not_innermost_is_rejected) {
  Fp8Backward a;
  a.d_o->set_stride({65536, 1, 4, 512});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::InvalidAttribute,
          {"dO 'dO' (uid 5) has strides [65536, 1, 4, 512]; the head dim"});
}

BOOST_AUTO_TEST_CASE(stats_of_other_dims_are_rejected) {
  Fp8Backward a;
  a.stats->set_dim({2, 4, 128, 2});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ShapeMismatch,
          {"Stats 'Stats' (uid 6) has dims [2, 4, 128, 2], expected [2, 4, 128, 1]"});
}

BOOST_AUTO_TEST_CASE(stats_in_half_are_rejected) {
  Fp8Backward a;
  a.stats->set_data_type(DataType::Half);
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"Stats 'Stats' (uid 6) has data type Half; the statistics are Float"});
}

BOOST_AUTO_TEST_CASE(a_factor_of_other_dims_is_rejected_naming_it) {
  Fp8Backward a;
  a.factor[6]->set_dim({1, 1, 2, 1});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ShapeMismatch,
          {"sdpa_fp8_backward 'attn': descale_dP 'descale_dP' (uid 17) has dims "
           "[1, 1, 2, 1], expected [1, 1, 1, 1]"});
}

BOOST_AUTO_TEST_CASE(a_half_factor_is_rejected) {
  Fp8Backward a;
  a.factor[11]->set_data_type(DataType::Half);
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"scale_dP 'scale_dP' (uid 22) has data type Half; the factors are Float"});
}

BOOST_AUTO_TEST_CASE(a_factor_passed_by_value_is_rejected) {
  Fp8Backward a;
  a.factor[3] = a.g.tensor(0.5F);
  a.factor[3]->set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1});
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::InvalidAttribute,
          {"descale_o", "is passed by value; the factors live in device memory"});
}

BOOST_AUTO_TEST_CASE(a_missing_factor_is_rejected_naming_its_port) {
  Fp8Backward a;
  a.factor[8] = nullptr;
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ForeignTensor, {"sdpa_fp8_backward 'attn': input scale_dQ is null"});
}

BOOST_AUTO_TEST_CASE(a_missing_do_is_rejected_naming_its_port) {
  Fp8Backward a;
  a.d_o = nullptr;
  a.run(SdpaFp8BackwardAttributes());
  refused(a.g, ErrorCode::ForeignTensor, {"sdpa_fp8_backward 'attn': input dO is null"});
}

BOOST_AUTO_TEST_CASE(a_bfloat16_gradient_is_rejected_as_blackwell_only) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  a.dq()->set_data_type(DataType::BFloat16);
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"dQ 'dQ' (uid 30) has data type BFloat16; on Hopper cuDNN's FP8 attention "
           "backward writes Fp8E4M3 or Fp8E5M2",
           "Blackwell and cuDNN 9.13"});
}

BOOST_AUTO_TEST_CASE(a_gradient_whose_head_dim_is_not_innermost_is_rejected) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  a.dk()->set_stride({131072, 1, 4, 1024});
  refused(a.g, ErrorCode::InvalidAttribute,
          {"dK 'dK' (uid 31) has strides [131072, 1, 4, 1024]; the head dim"});
}

BOOST_AUTO_TEST_CASE(an_amax_of_another_type_is_rejected) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  a.out[6]->set_data_type(DataType::Half);
  refused(a.g, ErrorCode::UnsupportedDataType,
          {"Amax_dP 'Amax_dP' (uid 36) has data type Half; Amax_dP is Float"});
}

BOOST_AUTO_TEST_CASE(an_amax_of_other_dims_is_rejected) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes());
  a.out[4]->set_dim({1, 1, 1, 2});
  refused(a.g, ErrorCode::ShapeMismatch,
          {"output 'Amax_dK' (uid 34) was given dims [1, 1, 1, 2], but the "
           "inputs give [1, 1, 1, 1]"});
}

BOOST_AUTO_TEST_CASE(a_bottom_right_causal_mask_is_rejected_as_blackwell_only) {
  Fp8Backward a({.s_q = 256, .s_kv = 256});
  a.run(SdpaFp8BackwardAttributes().set_causal_mask_bottom_right(true));
  refused(a.g, ErrorCode::InvalidAttribute,
          {"a bottom-right causal mask: cuDNN serves it in FP8 on Blackwell"});
}

BOOST_AUTO_TEST_CASE(a_ragged_do_is_rejected) {
  Fp8Backward a;
  a.add_lengths(2);
  auto offsets = a.g.tensor(tensor("offsets", 10, {3, 1, 1, 1}).set_data_type(DataType::Int32));
  a.d_o->set_stride({65536, 128, 512, 1}).set_ragged_offset(offsets);
  a.run(SdpaFp8BackwardAttributes().set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(
      a.seq_kv));
  refused(a.g, ErrorCode::InvalidAttribute,
          {"dO 'dO' (uid 5) is ragged (packed variable-length): FP8 attention takes "
           "BHSD or BSHD strides only (cudnn-frontend refuses the FP8 backward of THD "
           "on Hopper)"});
}

BOOST_AUTO_TEST_CASE(a_padding_mask_without_lengths_is_rejected) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes().set_padding_mask(true));
  refused(a.g, ErrorCode::InvalidAttribute,
          {"the padding mask needs both set_seq_len_q and set_seq_len_kv"});
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_rejected) {
  Fp8Backward a;
  a.run(SdpaFp8BackwardAttributes().set_compute_data_type(DataType::Half));
  refused(a.g, ErrorCode::UnsupportedDataType, {"attention accumulates in Float"});
}

BOOST_AUTO_TEST_CASE(a_failed_validation_leaves_the_outputs_unsettled) {
  Fp8Backward a({.d = 64, .d_v = 64});
  a.run(SdpaFp8BackwardAttributes());
  (void)validation_error(a.g);
  BOOST_TEST(a.dq()->dim().empty());
  BOOST_TEST(a.out[6]->dim().empty());
}

BOOST_AUTO_TEST_SUITE_END()
