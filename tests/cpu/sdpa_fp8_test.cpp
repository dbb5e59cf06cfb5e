// FP8 attention (sdpa_fp8) without a GPU: the node lowers to the composite pattern cuDNN's fused
// FP8 flash-attention engine matches (Q K^T, scale, descales, masks, softmax, amax of P, scale_s,
// P V, descales, scale_o, amax of O) as finalized cuDNN descriptors in that order; it infers O
// (Fp8E4M3), Stats and the two amax; and validate() refuses what cuDNN's FP8 engines on Hopper do
// not take, each with its ErrorCode and a message naming the node, the tensor and the values.
#define BOOST_TEST_MODULE sdpa_fp8
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
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
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::SdpaFp8Attributes;
using dnngraph::TensorAttributes;
using TensorPtr = std::shared_ptr<TensorAttributes>;
using namespace dnngraph::test;

namespace {

using Dims = std::vector<std::int64_t>;
using Names = OperationNames;

struct Shape {
  std::int64_t b = 2, h_q = 4, h_k = 4, s_q = 128, s_kv = 256, d = 64, d_v = 64;
};

// An FP8 graph (io type Fp8E4M3) with Q, K, V (uids 1-3, packed BHSD) of `s` and the six factors
// (uids 11-16, Float [1, 1, 1, 1]); run() adds the node and names O (4), Stats (5), Amax_S (6) and
// Amax_O (7).
struct Fp8Attention {
  Graph g;
  TensorPtr q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o, seq_q, seq_kv;
  TensorPtr o, stats, amax_s, amax_o;
  // The factors by name, in sdpa_fp8's order.
  static constexpr std::array<std::pair<const char*, TensorPtr Fp8Attention::*>, 6> factors{{
      {"descale_q", &Fp8Attention::descale_q},
      {"descale_k", &Fp8Attention::descale_k},
      {"descale_v", &Fp8Attention::descale_v},
      {"descale_s", &Fp8Attention::descale_s},
      {"scale_s", &Fp8Attention::scale_s},
      {"scale_o", &Fp8Attention::scale_o},
  }};

  explicit Fp8Attention(const Shape& s = {}) {
    g.set_io_data_type(DataType::Fp8E4M3).set_compute_data_type(DataType::Float);
    q = g.tensor(tensor("Q", 1, {s.b, s.h_q, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h_k, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h_k, s.s_kv, s.d_v}));
    std::int64_t uid = 11;
    for (const auto& [name, member] : factors) {
      this->*member = g.tensor(tensor(name, uid++, {1, 1, 1, 1}).set_data_type(DataType::Float));
    }
  }
  void add_lengths(std::int64_t b) {
    seq_q = g.tensor(tensor("seq_q", 8, {b, 1, 1, 1}).set_data_type(DataType::Int32));
    seq_kv = g.tensor(tensor("seq_kv", 9, {b, 1, 1, 1}).set_data_type(DataType::Int32));
  }
  void run(SdpaFp8Attributes attributes) {
    auto [out, st, as, ao] = g.sdpa_fp8(q, k, v, descale_q, descale_k, descale_v, descale_s,
                                        scale_s, scale_o, attributes.set_name("attn"));
    o = out;
    stats = st;
    amax_s = as;
    amax_o = ao;
    o->set_name("O").set_uid(4).set_output(true);
    if (stats) {
      stats->set_name("Stats").set_uid(5).set_output(true);
    }
    amax_s->set_name("Amax_S").set_uid(6).set_output(true);
    amax_o->set_name("Amax_O").set_uid(7).set_output(true);
  }
};

const std::string matmul = "OperationMatmul";
const std::string pointwise = "OperationPointwise";
const std::string reduction = "OperationReduction";

// max, minus max, exp, sum, log, log-sum-exp, divide.
const Names softmax{reduction, pointwise, pointwise, reduction, pointwise, pointwise, pointwise};

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_fp8_lowering)

BOOST_AUTO_TEST_CASE(inference_lowers_to_the_fp8_pattern_in_cudnn_frontends_order) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes());
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // Q K^T, descale_q, descale_k; softmax; amax of P, scale_s; P V, descale_s, descale_v, scale_o,
  // amax of O (before scale_o).
  const Names expected = concat({{matmul, pointwise, pointwise},
                                 softmax,
                                 {reduction, pointwise},
                                 {matmul, pointwise, pointwise, pointwise, reduction}});
  BOOST_TEST(s.backend_operations == expected, "got " << joined(s.backend_operations));
  BOOST_TEST(s.operations == (Names{"sdpa_fp8 'attn'"}));
  BOOST_TEST(a.stats == nullptr);
}

BOOST_AUTO_TEST_CASE(o_is_fp8_e4m3_and_the_amax_are_one_float_each) {
  Fp8Attention a({.d = 128, .d_v = 64});
  a.run(SdpaFp8Attributes());
  require_valid(a.g);
  BOOST_TEST(a.o->dim() == (Dims{2, 4, 128, 64}));
  BOOST_TEST(a.o->stride() == (Dims{32768, 8192, 64, 1}));
  BOOST_TEST((a.o->data_type() == DataType::Fp8E4M3));
  for (const TensorPtr& amax : {a.amax_s, a.amax_o}) {
    BOOST_TEST(amax->dim() == (Dims{1, 1, 1, 1}));
    BOOST_TEST((amax->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(training_with_scale_causal_padding_and_grouped_query_lowers) {
  Fp8Attention a({.b = 3, .h_q = 8, .h_k = 2, .s_q = 256, .s_kv = 256, .d = 128, .d_v = 128});
  a.add_lengths(3);
  a.run(SdpaFp8Attributes()
            .set_attn_scale(0.088F)
            .set_causal_mask(true)
            .set_padding_mask(true)
            .set_seq_len_q(a.seq_q)
            .set_seq_len_kv(a.seq_kv)
            .set_generate_stats(true));
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // Q K^T, scale, descale_q, descale_k; padding: row and column index, two compares, and,
  // select; causal: row and column index, compare, select; softmax; the rest as in inference.
  const Names expected = concat({{matmul, pointwise, pointwise, pointwise},
                                 Names(6, pointwise),
                                 Names(4, pointwise),
                                 softmax,
                                 {reduction, pointwise},
                                 {matmul, pointwise, pointwise, pointwise, reduction}});
  BOOST_TEST(s.backend_operations == expected, "got " << joined(s.backend_operations));
  BOOST_REQUIRE(a.stats != nullptr);
  BOOST_TEST(a.stats->dim() == (Dims{3, 8, 256, 1}));
  BOOST_TEST((a.stats->data_type() == DataType::Float));
  BOOST_TEST(a.o->dim() == (Dims{3, 8, 256, 128}));
}

BOOST_AUTO_TEST_CASE(bshd_strides_are_taken_for_inputs_and_kept_for_o) {
  Fp8Attention a;
  for (const TensorPtr& t : {a.q, a.k, a.v}) {
    const Dims& d = t->dim();
    t->set_stride({d[2] * d[1] * d[3], d[3], d[1] * d[3], 1});
  }
  a.run(SdpaFp8Attributes());
  a.o->set_stride({32768, 64, 256, 1});
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(a.o->stride() == (Dims{32768, 64, 256, 1}));
}

BOOST_AUTO_TEST_CASE(the_node_validates_where_the_loaded_cudnn_offers_fp8_attention) {
  // cuDNN 9.1 first serves the pattern (cudnn-frontend's and TransformerEngine's gate); every
  // cuDNN dnngraph runs on (9.19 and newer) does, so the refusal below 9.1 cannot be reached here.
  BOOST_TEST(dnngraph::cudnn_version_needed(dnngraph::CudnnCapability::Fp8Attention) == 90100);
  Fp8Attention a;
  a.run(SdpaFp8Attributes());
  validates_where_offered(a.g, dnngraph::CudnnCapability::Fp8Attention, "needs cuDNN >= 9.1.0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_fp8_validation)

BOOST_AUTO_TEST_CASE(bfloat16_inputs_are_rejected) {
  Fp8Attention a;
  for (const TensorPtr& t : {a.q, a.k, a.v}) {
    t->set_data_type(DataType::BFloat16);
  }
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "sdpa_fp8 'attn': Q 'Q' (uid 1) has data type BFloat16; FP8 "
                      "attention takes Fp8E4M3"));
}

BOOST_AUTO_TEST_CASE(e5m2_inputs_are_rejected_as_not_measured) {
  Fp8Attention a;
  a.v->set_data_type(DataType::Fp8E5M2);
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "V 'V' (uid 3) has data type Fp8E5M2"));
  BOOST_TEST(mentions(error, "not measured"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_not_a_multiple_of_sixteen_is_rejected) {
  Fp8Attention a({.d = 72, .d_v = 64});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "the head dim of Q and K is 72; cuDNN's FP8 attention engines on "
                      "Hopper take multiples of 16 up to 256"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_above_256_is_rejected) {
  Fp8Attention a({.d = 64, .d_v = 272});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the head dim of V is 272"));
}

BOOST_AUTO_TEST_CASE(kv_heads_that_do_not_divide_q_heads_are_rejected) {
  Fp8Attention a({.h_q = 4, .h_k = 3});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "K has 3 heads, which does not divide Q's 4"));
}

BOOST_AUTO_TEST_CASE(a_factor_of_other_dims_is_rejected_naming_it) {
  Fp8Attention a;
  a.descale_k->set_dim({1, 1, 1, 2});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "sdpa_fp8 'attn': descale_k 'descale_k' (uid 12) has dims "
                      "[1, 1, 1, 2], expected [1, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_factor_of_rank_one_is_rejected) {
  Fp8Attention a;
  a.scale_o->set_dim({1});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "scale_o 'scale_o' (uid 16) has dims [1], expected [1, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_half_factor_is_rejected) {
  Fp8Attention a;
  a.scale_s->set_data_type(DataType::Half);
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "scale_s 'scale_s' (uid 15) has data type Half; the factors are "
                      "Float"));
}

BOOST_AUTO_TEST_CASE(a_factor_passed_by_value_is_rejected) {
  Fp8Attention a;
  a.descale_s = a.g.tensor(0.5F);
  a.descale_s->set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1});
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "descale_s"));
  BOOST_TEST(mentions(error, "is passed by value; the factors live in device memory"));
}

BOOST_AUTO_TEST_CASE(a_missing_factor_is_rejected_naming_its_port) {
  Fp8Attention a;
  a.scale_s = nullptr;
  a.run(SdpaFp8Attributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(mentions(error, "scale_s"));
  BOOST_TEST(mentions(error, "sdpa_fp8 'attn'"));
}

BOOST_AUTO_TEST_CASE(a_bfloat16_output_is_rejected_as_blackwell_only) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes());
  a.o->set_data_type(DataType::BFloat16);
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "O 'O' (uid 4) has data type BFloat16; on Hopper cuDNN's FP8 "
                      "attention writes Fp8E4M3"));
  BOOST_TEST(mentions(error, "Blackwell and cuDNN 9.13"));
}

BOOST_AUTO_TEST_CASE(an_amax_of_another_type_is_rejected) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes());
  a.amax_o->set_data_type(DataType::Half);
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Amax_O 'Amax_O' (uid 7) has data type Half; Amax_O is Float"));
}

BOOST_AUTO_TEST_CASE(an_amax_of_other_dims_is_rejected) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes());
  a.amax_s->set_dim({1, 1, 1, 4});
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "output 'Amax_S' (uid 6) was given dims [1, 1, 1, 4], but the "
                      "inputs give [1, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(stats_of_another_type_are_rejected) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes().set_generate_stats(true));
  a.stats->set_data_type(DataType::BFloat16);
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Stats 'Stats' (uid 5) has data type BFloat16; Stats is Float"));
}

BOOST_AUTO_TEST_CASE(a_bottom_right_causal_mask_is_rejected_as_blackwell_only) {
  Fp8Attention a({.s_q = 256, .s_kv = 256});
  a.run(SdpaFp8Attributes().set_causal_mask_bottom_right(true));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "a bottom-right causal mask: cuDNN serves it in FP8 on Blackwell"));
}

BOOST_AUTO_TEST_CASE(a_ragged_q_is_rejected) {
  Fp8Attention a;
  a.add_lengths(2);
  auto offsets = a.g.tensor(tensor("offsets", 10, {3, 1, 1, 1}).set_data_type(DataType::Int32));
  a.q->set_stride({32768, 64, 256, 1}).set_ragged_offset(offsets);
  a.run(SdpaFp8Attributes().set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "Q 'Q' (uid 1) is ragged (packed variable-length): FP8 attention "
                      "takes BHSD or BSHD strides only"));
}

BOOST_AUTO_TEST_CASE(a_padding_mask_without_lengths_is_rejected) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes().set_padding_mask(true));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the padding mask needs both set_seq_len_q and set_seq_len_kv"));
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_rejected) {
  Fp8Attention a;
  a.run(SdpaFp8Attributes().set_compute_data_type(DataType::Half));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "attention accumulates in Float"));
}

BOOST_AUTO_TEST_CASE(a_failed_validation_leaves_the_outputs_unsettled) {
  Fp8Attention a({.d = 72, .d_v = 64});
  a.run(SdpaFp8Attributes());
  (void)validation_error(a.g);
  BOOST_TEST(a.o->dim().empty());
  BOOST_TEST(a.amax_o->dim().empty());
}

BOOST_AUTO_TEST_SUITE_END()
