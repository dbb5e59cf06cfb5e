// What cuDNN itself reads from an FP8 attention backward (sdpa_fp8_backward) graph, without a GPU:
// cuDNN 9.19 finalizes the operation graph and a kernel cache on the CPU, and the cache's document
// carries the operation graph as cuDNN saw it (its classification, each operation's tensors and
// types). The graph is classified as cuDNN's SDPA backward pattern, and its wiring is the pattern
// cudnn-frontend's SDPA FP8 backward node builds: each gradient an FP8 matmul (descale A, descale
// B, the gradient's scale, the amax before it), D from dO * O descaled, dS's amax before scale_dP
// and dS in dO's FP8 type as the A operand of dQ's and dK's matmuls.
#define BOOST_TEST_MODULE sdpa_fp8_backward_pattern
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"

#include <boost/json.hpp>

#include <string>

#include "support/cached_operation_graph.hpp"
#include "support/every_node_graphs.hpp"

namespace json = boost::json;
using dnngraph::test::data_type_of;
using dnngraph::test::operations;
using dnngraph::test::text;
using dnngraph::test::the_operation;

namespace {

// The every-node FP8 backward graph's uids (support/every_node_graphs.hpp): Q, K, V 1-3, O 6,
// dO 7 (Fp8E5M2), the factors 20-31 in sdpa_fp8_backward's order, dQ, dK, dV 10-12, the amax
// 13-16.
constexpr const char* q = "1";
constexpr const char* o = "6";
constexpr const char* d_o = "7";
constexpr const char* descale_q = "20";
constexpr const char* descale_k = "21";
constexpr const char* descale_o = "23";
constexpr const char* descale_do = "24";
constexpr const char* descale_s = "25";
constexpr const char* descale_dp = "26";
constexpr const char* scale_dq = "28";
constexpr const char* scale_dk = "29";
constexpr const char* scale_dv = "30";
constexpr const char* scale_dp = "31";
constexpr const char* dq = "10";
constexpr const char* dk = "11";
constexpr const char* dv = "12";
constexpr const char* amax_dq = "13";
constexpr const char* amax_dk = "14";
constexpr const char* amax_dv = "15";
constexpr const char* amax_dp = "16";

// The operation graph cuDNN wrote into the kernel cache of the every-node FP8 backward graph,
// built dynamic-shape on the CPU.
json::object operation_graph() {
  dnngraph::Graph g = dnngraph::test::every_node::sdpa_fp8_backward();
  return dnngraph::test::cached_operation_graph(g);
}

// Skips a case where the loaded cuDNN lacks the FP8 backward, naming the version it needs.
boost::test_tools::assertion_result fp8_backward_offered(
    boost::unit_test::test_unit_id /*unused*/) {
  return dnngraph::test::every_node::cudnn_has(dnngraph::backend::Feature::Fp8AttentionBackward);
}

// The matmul of one FP8 gradient, found from its output: `out` = scale x (descale_b x (descale_a
// x C)), where C is the matmul's output or, with grouped-query attention, its sum over each
// group; the amax reads the descaled product. Checks each factor's uid; returns the matmul.
json::object fp8_matmul_of(const json::object& graph, const char* out, const char* amax,
                           const char* scale, const char* descale_a, const char* descale_b) {
  const json::object scaled = the_operation(graph, "POINTWISE", "Y", out);
  BOOST_TEST(text(scaled.at("pointwiseMode")) == "CUDNN_POINTWISE_MUL");
  BOOST_TEST(text(scaled.at("B")) == scale);
  const std::string descaled = text(scaled.at("X"));
  const json::object amax_op = the_operation(graph, "REDUCTION", "Y", amax);
  BOOST_TEST(text(amax_op.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_AMAX");
  BOOST_TEST(text(amax_op.at("X")) == descaled);
  const json::object by_b = the_operation(graph, "POINTWISE", "Y", descaled);
  BOOST_TEST(text(by_b.at("B")) == descale_b);
  const json::object by_a = the_operation(graph, "POINTWISE", "Y", text(by_b.at("X")));
  BOOST_TEST(text(by_a.at("B")) == descale_a);
  const std::string product = text(by_a.at("X"));
  const auto summed = operations(graph, "REDUCTION", "Y", product);
  const std::string c = summed.empty() ? product : text(summed.front().at("X"));
  return the_operation(graph, "MATMUL", "matC", c);
}

}  // namespace

BOOST_AUTO_TEST_CASE(cudnn_classifies_the_graph_as_its_sdpa_backward_pattern,
                     *boost::unit_test::precondition(fp8_backward_offered)) {
  const json::object graph = operation_graph();
  BOOST_TEST(text(graph.at("finalizeMode")) == "SDPA_BWD");
}

BOOST_AUTO_TEST_CASE(d_is_the_descaled_row_sum_of_do_times_o,
                     *boost::unit_test::precondition(fp8_backward_offered)) {
  const json::object graph = operation_graph();
  const auto products = operations(graph, "POINTWISE", "X", d_o);
  const json::object* do_o = nullptr;
  for (const json::object& op : products) {
    if (text(op.at("B")) == o) {
      do_o = &op;
    }
  }
  BOOST_TEST_REQUIRE(do_o != nullptr);
  const json::object sum = the_operation(graph, "REDUCTION", "X", text(do_o->at("Y")));
  BOOST_TEST(text(sum.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_ADD");
  const json::object by_do = the_operation(graph, "POINTWISE", "X", text(sum.at("Y")));
  BOOST_TEST(text(by_do.at("B")) == descale_do);
  const json::object by_o = the_operation(graph, "POINTWISE", "X", text(by_do.at("Y")));
  BOOST_TEST(text(by_o.at("B")) == descale_o);
  // D is what dP - D subtracts.
  const json::object minus_d = the_operation(graph, "POINTWISE", "B", text(by_o.at("Y")));
  BOOST_TEST(text(minus_d.at("pointwiseMode")) == "CUDNN_POINTWISE_SUB");
}

BOOST_AUTO_TEST_CASE(dv_is_the_fp8_matmul_of_scale_s_p_transposed_and_do,
                     *boost::unit_test::precondition(fp8_backward_offered)) {
  const json::object graph = operation_graph();
  const json::object matmul = fp8_matmul_of(graph, dv, amax_dv, scale_dv, descale_s, descale_do);
  BOOST_TEST(text(matmul.at("matB")) == d_o);
  // P^T is a reshape of scale_s P, in Q's type.
  const std::string p_t = text(matmul.at("matA"));
  BOOST_TEST(data_type_of(graph, p_t) == "CUDNN_DATA_FP8_E4M3");
  BOOST_TEST(operations(graph, "RESHAPE", "Y", p_t).size() == 1U);
  BOOST_TEST(data_type_of(graph, dv) == "CUDNN_DATA_FP8_E5M2");  // dO's type
}

BOOST_AUTO_TEST_CASE(ds_has_its_amax_before_scale_dp_and_feeds_dq_in_dos_fp8_type,
                     *boost::unit_test::precondition(fp8_backward_offered)) {
  const json::object graph = operation_graph();
  const json::object matmul = fp8_matmul_of(graph, dq, amax_dq, scale_dq, descale_dp, descale_k);
  const std::string ds_fp8 = text(matmul.at("matA"));
  BOOST_TEST(data_type_of(graph, ds_fp8) == "CUDNN_DATA_FP8_E5M2");
  const json::object scale = the_operation(graph, "POINTWISE", "Y", ds_fp8);
  BOOST_TEST(text(scale.at("B")) == scale_dp);
  const json::object amax = the_operation(graph, "REDUCTION", "Y", amax_dp);
  BOOST_TEST(text(amax.at("reductionOp")) == "CUDNN_REDUCE_TENSOR_AMAX");
  BOOST_TEST(text(amax.at("X")) == text(scale.at("X")));
  // K comes back from K^T through a reshape.
  BOOST_TEST(operations(graph, "RESHAPE", "Y", text(matmul.at("matB"))).size() == 1U);
}

BOOST_AUTO_TEST_CASE(dk_is_the_fp8_matmul_of_ds_transposed_and_q_summed_over_each_group,
                     *boost::unit_test::precondition(fp8_backward_offered)) {
  const json::object graph = operation_graph();
  const json::object matmul = fp8_matmul_of(graph, dk, amax_dk, scale_dk, descale_dp, descale_q);
  BOOST_TEST(text(matmul.at("matB")) == q);
  // Grouped-query attention (h_q 4, h_k 2): the product per query head is summed into dK's heads.
  const auto summed = operations(graph, "REDUCTION", "X", text(matmul.at("matC")));
  BOOST_TEST_REQUIRE(summed.size() == 1U);
  BOOST_TEST(text(summed.front().at("reductionOp")) == "CUDNN_REDUCE_TENSOR_ADD");
}
