// What cuDNN itself reads from attention graphs with a bias, dBias, ALiBi and a sliding window,
// without a GPU (the operation graph cuDNN 9.19 serializes into a kernel cache built on the CPU):
// it still classifies them as the plain graphs' patterns, and each modifier is wired where
// cudnn-frontend's composite nodes put it: the bias ADD reads the scaled scores, ALiBi multiplies
// column - row by the slopes and adds that after the bias, the window compares column + its Float
// length with the row and selects, dBias sums dS before the attention scale.
#define BOOST_TEST_MODULE sdpa_masks_pattern
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/cached_operation_graph.hpp"
#include "support/every_node_graphs.hpp"

namespace json = boost::json;
using dnngraph::DataType;
using dnngraph::test::data_type_of;
using dnngraph::test::operations;
using dnngraph::test::text;
using dnngraph::test::the_operation;

namespace {

// BFloat16 Q (uid 1) [2, 4, 64, 64], K and V (2, 3) [2, 4, 128, 64], the bias (8)
// [1, 4, 64, 128], ALiBi's slopes (9) [1, 4, 1, 1]; the forward writes O (4) and Stats (5), the
// backward reads O, dO, Stats (4-6)
// and writes dQ, dK, dV, D (10-13) and dBias (14).
struct Shapes {
  dnngraph::Graph g;
  std::shared_ptr<dnngraph::TensorAttributes> q, k, v, bias, slopes;

  Shapes() {
    g.set_io_data_type(DataType::BFloat16);
    q = input("Q", 1, {2, 4, 64, 64});
    k = input("K", 2, {2, 4, 128, 64});
    v = input("V", 3, {2, 4, 128, 64});
    bias = input("bias", 8, {1, 4, 64, 128});
    slopes = input("slopes", 9, {1, 4, 1, 1});
    slopes->set_data_type(DataType::Float);
  }
  std::shared_ptr<dnngraph::TensorAttributes> input(const char* name, std::int64_t uid,
                                                    const std::vector<std::int64_t>& dims) {
    return g.tensor(dnngraph::TensorAttributes().set_name(name).set_uid(uid).set_dim(dims));
  }
};

json::object forward(bool modifiers) {
  Shapes s;
  auto a = dnngraph::SdpaAttributes().set_attn_scale(0.125F).set_causal_mask(true);
  if (modifiers) {
    a.set_bias(s.bias).set_sliding_window_length(16).set_alibi_mask(true).set_alibi_slopes(
        s.slopes);
  }
  auto [o, stats] = s.g.sdpa(s.q, s.k, s.v, a.set_generate_stats(true));
  o->set_uid(4).set_output(true);
  stats->set_uid(5).set_output(true);
  return dnngraph::test::cached_operation_graph(s.g);
}

json::object backward(bool modifiers) {
  Shapes s;
  auto o = s.input("O", 4, {2, 4, 64, 64});
  auto d_o = s.input("dO", 5, {2, 4, 64, 64});
  auto stats = s.g.tensor(dnngraph::TensorAttributes()
                              .set_name("Stats")
                              .set_uid(6)
                              .set_dim({2, 4, 64, 1})
                              .set_data_type(DataType::Float));
  auto a = dnngraph::SdpaBackwardAttributes().set_attn_scale(0.125F).set_causal_mask(true);
  if (modifiers) {
    a.set_bias(s.bias).set_sliding_window_length(16).set_dbias_output(true);
    a.set_alibi_mask(true).set_alibi_slopes(s.slopes);
  }
  const auto outputs = s.g.sdpa_backward(s.q, s.k, s.v, o, d_o, stats, a);
  std::int64_t uid = 10;
  for (const auto& t : outputs) {
    t->set_uid(uid++).set_output(true);
  }
  if (modifiers) {
    s.g.dbias(outputs[0])->set_uid(14).set_output(true);
  }
  return dnngraph::test::cached_operation_graph(s.g);
}

// The pointwise operations of `mode` ("CUDNN_POINTWISE_CMP_GT").
std::vector<json::object> pointwise_of_mode(const json::object& graph, const std::string& mode) {
  std::vector<json::object> found;
  for (const json::value& node : graph.at("nodes").as_array()) {
    const json::object& op = node.as_object();
    const auto* m = op.if_contains("pointwiseMode");
    if (m != nullptr && text(*m) == mode) {
      found.push_back(op);
    }
  }
  return found;
}

// The one pointwise operation that writes uid, checked to be of `mode`.
json::object written_by(const json::object& graph, const std::string& uid,
                        const std::string& mode) {
  json::object op = the_operation(graph, "POINTWISE", "Y", uid);
  BOOST_TEST(text(op.at("pointwiseMode")) == mode);
  return op;
}

boost::test_tools::assertion_result window_with_bias_offered(boost::unit_test::test_unit_id) {
  return dnngraph::test::every_node::cudnn_has(
      dnngraph::backend::Feature::SdpaSlidingWindowCombined);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_masks_pattern, *boost::unit_test::precondition(window_with_bias_offered))

BOOST_AUTO_TEST_CASE(cudnn_classifies_both_passes_as_without_the_modifiers) {
  const json::object plain_forward = forward(false);
  const json::object modified_forward = forward(true);
  BOOST_TEST(text(plain_forward.at("finalizeMode")) == "SDPA_FWD");
  BOOST_TEST(text(modified_forward.at("finalizeMode")) == "SDPA_FWD");
  const json::object plain_backward = backward(false);
  const json::object modified_backward = backward(true);
  BOOST_TEST_MESSAGE("backward: " << text(plain_backward.at("finalizeMode")));
  BOOST_TEST(text(modified_backward.at("finalizeMode")) == text(plain_backward.at("finalizeMode")));
}

BOOST_AUTO_TEST_CASE(the_bias_is_added_to_the_scaled_scores) {
  const json::object graph = forward(true);
  const json::object add = the_operation(graph, "POINTWISE", "B", "8");
  BOOST_TEST(text(add.at("pointwiseMode")) == "CUDNN_POINTWISE_ADD");
  const json::object scale = written_by(graph, text(add.at("X")), "CUDNN_POINTWISE_MUL");
  const auto first = operations(graph, "MATMUL", "matA", "1");
  BOOST_TEST_REQUIRE(first.size() == 1U);
  BOOST_TEST(text(scale.at("X")) == text(first.front().at("matC")));
}

BOOST_AUTO_TEST_CASE(alibi_adds_the_slopes_times_column_minus_row_after_the_bias) {
  const json::object graph = forward(true);
  const json::object times = the_operation(graph, "POINTWISE", "B", "9");
  BOOST_TEST(text(times.at("pointwiseMode")) == "CUDNN_POINTWISE_MUL");
  const json::object distance = written_by(graph, text(times.at("X")), "CUDNN_POINTWISE_SUB");
  BOOST_TEST(data_type_of(graph, text(distance.at("Y"))) == "CUDNN_DATA_INT32");
  written_by(graph, text(distance.at("X")), "CUDNN_POINTWISE_GEN_INDEX");  // the column
  written_by(graph, text(distance.at("B")), "CUDNN_POINTWISE_GEN_INDEX");  // the row
  // The scores plus ALiBi: an ADD of the biased scores and the product.
  const json::object added = the_operation(graph, "POINTWISE", "B", text(times.at("Y")));
  BOOST_TEST(text(added.at("pointwiseMode")) == "CUDNN_POINTWISE_ADD");
  const json::object bias = the_operation(graph, "POINTWISE", "B", "8");
  BOOST_TEST(text(added.at("X")) == text(bias.at("Y")));
}

BOOST_AUTO_TEST_CASE(the_window_compares_column_plus_length_with_the_row) {
  const json::object graph = forward(true);
  // The causal mask compares with CMP_GE, the window with CMP_GT: one each.
  BOOST_TEST(pointwise_of_mode(graph, "CUDNN_POINTWISE_CMP_GE").size() == 1U);
  const auto greater = pointwise_of_mode(graph, "CUDNN_POINTWISE_CMP_GT");
  BOOST_TEST_REQUIRE(greater.size() == 1U);
  const json::object plus = written_by(graph, text(greater.front().at("X")), "CUDNN_POINTWISE_ADD");
  BOOST_TEST(data_type_of(graph, text(plus.at("Y"))) == "CUDNN_DATA_FLOAT");
  written_by(graph, text(plus.at("X")), "CUDNN_POINTWISE_GEN_INDEX");             // the column
  written_by(graph, text(greater.front().at("B")), "CUDNN_POINTWISE_GEN_INDEX");  // the row
  BOOST_TEST(pointwise_of_mode(graph, "CUDNN_POINTWISE_BINARY_SELECT").size() == 2U);
}

BOOST_AUTO_TEST_CASE(dbias_sums_ds_before_the_attention_scale) {
  const json::object graph = backward(true);
  const json::object dbias = the_operation(graph, "REDUCTION", "Y", "14");
  BOOST_TEST(text(dbias.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_ADD");
  // dS before the scale is (dP - D) * P: a MUL of the SUB whose B is D (uid 13).
  const json::object ds = written_by(graph, text(dbias.at("X")), "CUDNN_POINTWISE_MUL");
  BOOST_TEST(text(written_by(graph, text(ds.at("X")), "CUDNN_POINTWISE_SUB").at("B")) == "13");
  // The attention scale multiplies the same dS after it.
  const auto scaled = operations(graph, "POINTWISE", "X", text(dbias.at("X")));
  BOOST_TEST(scaled.size() == 1U);
  BOOST_TEST(data_type_of(graph, "14") == "CUDNN_DATA_BFLOAT16");
}

BOOST_AUTO_TEST_SUITE_END()
