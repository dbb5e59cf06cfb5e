// What cuDNN itself reads from an FP8 attention (sdpa_fp8) graph, without a GPU: cuDNN 9.19
// finalizes the operation graph and a kernel cache on the CPU, and the cache's document carries
// the operation graph as cuDNN saw it (its classification, each operation's tensors). The graph
// is classified as cuDNN's SDPA forward pattern, and its wiring is the pattern cudnn-frontend's
// SDPA FP8 node builds: the amax of S reads the softmax's P, the second matmul reads scale_s P in
// FP8, the amax of O reads O before scale_o.
#define BOOST_TEST_MODULE sdpa_fp8_pattern
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"

#include <boost/json.hpp>

#include "support/cached_operation_graph.hpp"
#include "support/every_node_graphs.hpp"

namespace json = boost::json;
using dnngraph::test::data_type_of;
using dnngraph::test::operations;
using dnngraph::test::text;
using dnngraph::test::the_operation;

namespace {

// The operation graph cuDNN wrote into the kernel cache of the every-node FP8 graph (Q, K, V
// uids 1-3, factors 20-25: descale_q, _k, _v, _s, scale_s, scale_o; O 10, Stats 11, Amax_S 12,
// Amax_O 13), built dynamic-shape on the CPU.
json::object operation_graph() {
  dnngraph::Graph g = dnngraph::test::every_node::sdpa_fp8();
  return dnngraph::test::cached_operation_graph(g);
}

// Skips a case where the loaded cuDNN lacks FP8 attention, naming the version it needs.
boost::test_tools::assertion_result fp8_offered(boost::unit_test::test_unit_id /*unused*/) {
  return dnngraph::test::every_node::cudnn_has(dnngraph::backend::Feature::Fp8Attention);
}

}  // namespace

BOOST_AUTO_TEST_CASE(cudnn_classifies_the_graph_as_its_sdpa_forward_pattern,
                     *boost::unit_test::precondition(fp8_offered)) {
  const json::object graph = operation_graph();
  BOOST_TEST(text(graph.at("finalizeMode")) == "SDPA_FWD");
}

BOOST_AUTO_TEST_CASE(the_amax_of_s_reads_p_and_scale_s_makes_the_fp8_operand_of_p_v,
                     *boost::unit_test::precondition(fp8_offered)) {
  const json::object graph = operation_graph();
  const json::object amax_s = the_operation(graph, "REDUCTION", "Y", "12");
  BOOST_TEST(text(amax_s.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_AMAX");
  const std::string p = text(amax_s.at("X"));
  // P is the softmax's division, Float.
  const json::object divide = the_operation(graph, "POINTWISE", "Y", p);
  BOOST_TEST(text(divide.at("pointwiseMode")) == "CUDNN_POINTWISE_DIV");
  BOOST_TEST(data_type_of(graph, p) == "CUDNN_DATA_FLOAT");
  // scale_s (uid 24) times P, in FP8, is the A operand of the second matmul, whose B is V.
  const auto scaled = operations(graph, "POINTWISE", "X", p);
  BOOST_TEST_REQUIRE(scaled.size() == 1U);
  BOOST_TEST(text(scaled.front().at("B")) == "24");
  const std::string p_fp8 = text(scaled.front().at("Y"));
  BOOST_TEST(data_type_of(graph, p_fp8) == "CUDNN_DATA_FP8_E4M3");
  const json::object pv = the_operation(graph, "MATMUL", "matA", p_fp8);
  BOOST_TEST(text(pv.at("matB")) == "3");
}

BOOST_AUTO_TEST_CASE(o_is_scale_o_times_the_descaled_product_whose_amax_is_amax_o,
                     *boost::unit_test::precondition(fp8_offered)) {
  const json::object graph = operation_graph();
  // O (uid 10) = scale_o (25) x O~; Amax_O (13) = amax(O~).
  const json::object scale_o = the_operation(graph, "POINTWISE", "Y", "10");
  BOOST_TEST(text(scale_o.at("B")) == "25");
  const std::string unscaled = text(scale_o.at("X"));
  const json::object amax_o = the_operation(graph, "REDUCTION", "Y", "13");
  BOOST_TEST(text(amax_o.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_AMAX");
  BOOST_TEST(text(amax_o.at("X")) == unscaled);
  // O~ = descale_v (22) x (descale_s (23) x P V).
  const json::object descale_v = the_operation(graph, "POINTWISE", "Y", unscaled);
  BOOST_TEST(text(descale_v.at("B")) == "22");
  const json::object descale_s = the_operation(graph, "POINTWISE", "Y", text(descale_v.at("X")));
  BOOST_TEST(text(descale_s.at("B")) == "23");
  const json::object pv = the_operation(graph, "MATMUL", "matC", text(descale_s.at("X")));
  BOOST_TEST(text(pv.at("matB")) == "3");
  BOOST_TEST(data_type_of(graph, "10") == "CUDNN_DATA_FP8_E4M3");
}

BOOST_AUTO_TEST_CASE(the_scores_are_descaled_by_q_then_k_after_the_attention_scale,
                     *boost::unit_test::precondition(fp8_offered)) {
  const json::object graph = operation_graph();
  const auto first = operations(graph, "MATMUL", "matA", "1");
  BOOST_TEST_REQUIRE(first.size() == 1U);
  BOOST_TEST(text(first.front().at("matB")) == "2");  // K^T: K's uid, transposed view
  const std::string scores = text(first.front().at("matC"));
  const auto scaled = operations(graph, "POINTWISE", "X", scores);
  BOOST_TEST_REQUIRE(scaled.size() == 1U);  // the attention scale (a by-value scalar)
  const auto by_q = operations(graph, "POINTWISE", "X", text(scaled.front().at("Y")));
  BOOST_TEST_REQUIRE(by_q.size() == 1U);
  BOOST_TEST(text(by_q.front().at("B")) == "20");
  const auto by_k = operations(graph, "POINTWISE", "X", text(by_q.front().at("Y")));
  BOOST_TEST_REQUIRE(by_k.size() == 1U);
  BOOST_TEST(text(by_k.front().at("B")) == "21");
}
