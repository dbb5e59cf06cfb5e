// The plan document of Graph::serialize(), on the CPU: what to_json writes parses back to the
// same fields; anything it would not write is refused naming the member, what was expected and
// what was given; a changed cuDNN plan fails its digest. Graph::serialize() before a build and
// deserialize() without a handle are refused without touching the graph.
#define BOOST_TEST_MODULE plan_document
#include <boost/test/unit_test.hpp>

#include "api/dnngraph.hpp"
#include "detail/plan/plan_document.hpp"

#include <cstdint>
#include <string>

#include "support/every_node_graphs.hpp"

namespace {

using dnngraph::ErrorCode;
using dnngraph::detail::parse_plan_document;
using dnngraph::detail::PlanDocument;
using dnngraph::detail::to_json;

PlanDocument sample(bool with_plan) {
  PlanDocument d;
  d.cudnn_version = 91900;
  d.gpu = {"NVIDIA H200", 9, 0};
  d.key = "0123456789abcdef0123456789abcdef";
  d.dynamic_shape = true;
  d.mode = dnngraph::HeuristicMode::B;
  d.engine = {7, {{3, 22}, {1, -1}}};
  d.numerical_notes = {dnngraph::NumericalNote::TensorCore,
                       dnngraph::NumericalNote::Nondeterministic};
  d.behavior_notes = {dnngraph::BehaviorNote::RuntimeCompilation};
  if (with_plan) {
    d.cudnn_plan = R"({"plan": "a \"quoted\" text\nwith a newline"})";
  }
  return d;
}

// The refusal of `text`: InvalidJson, with `expected` in its message.
void check_refused(const std::string& text, const std::string& expected) {
  const auto parsed = parse_plan_document(text);
  BOOST_REQUIRE_MESSAGE(!parsed.has_value(), "accepted: " << text);
  BOOST_TEST((parsed.error().code == ErrorCode::InvalidJson));
  BOOST_TEST(parsed.error().message.find(expected) != std::string::npos,
             "message: " << parsed.error().message << "; expected to contain: " << expected);
}

// The document with `from` (its first occurrence) replaced by `to`.
std::string with(const std::string& from, const std::string& to, bool with_plan = true) {
  std::string text = to_json(sample(with_plan));
  const auto at = text.find(from);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, from << " not in " << text);
  return text.replace(at, from.size(), to);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plan_documents)

BOOST_AUTO_TEST_CASE(what_to_json_writes_parses_back_to_the_same_fields) {
  for (const bool with_plan : {true, false}) {
    const PlanDocument d = sample(with_plan);
    const auto parsed = parse_plan_document(to_json(d));
    BOOST_REQUIRE_MESSAGE(parsed.has_value(), parsed.error().message);
    BOOST_TEST(parsed->cudnn_version == d.cudnn_version);
    BOOST_TEST((parsed->gpu == d.gpu));
    BOOST_TEST(parsed->key == d.key);
    BOOST_TEST(parsed->dynamic_shape == d.dynamic_shape);
    BOOST_TEST((parsed->mode == d.mode));
    BOOST_TEST((parsed->engine == d.engine));
    BOOST_TEST((parsed->numerical_notes == d.numerical_notes));
    BOOST_TEST((parsed->behavior_notes == d.behavior_notes));
    BOOST_TEST((parsed->cudnn_plan == d.cudnn_plan));
  }
}

BOOST_AUTO_TEST_CASE(text_that_is_no_json_object_is_refused) {
  check_refused("", "does not parse");
  check_refused("{\"format\": ", "does not parse");
  check_refused("[1, 2]", "expected an object");
}

BOOST_AUTO_TEST_CASE(another_format_or_format_version_is_refused) {
  check_refused(with("\"dnngraph-plan\"", "\"dnngraph-kernel-cache\""), ".format");
  check_refused(with("\"format_version\":1", "\"format_version\":2"), ".format_version");
}

BOOST_AUTO_TEST_CASE(a_missing_or_unknown_member_is_refused_by_name) {
  check_refused(with("\"key\":", "\"kei\":"), ".kei");
  check_refused(with("\"dynamic_shape\":true,", ""), ".dynamic_shape");
  check_refused(with("\"cudnn_plan_digest\"", "\"digest\""), ".digest");
}

BOOST_AUTO_TEST_CASE(members_of_the_wrong_type_or_range_are_refused) {
  check_refused(with("\"cudnn_version\":91900", "\"cudnn_version\":\"9.19\""), ".cudnn_version");
  check_refused(with("\"cudnn_version\":91900", "\"cudnn_version\":-1"), ".cudnn_version");
  check_refused(with("\"major\":9", "\"major\":9.5"), ".gpu.major");
  check_refused(with("\"mode\":\"B\"", "\"mode\":\"C\""), ".mode");
  check_refused(with("[3,22]", "[3]"), ".engine.knobs[0]");
  check_refused(with("\"TensorCore\"", "\"Tensor\""), ".numerical_notes[0]");
  check_refused(with("\"dynamic_shape\":true", "\"dynamic_shape\":1"), ".dynamic_shape");
}

BOOST_AUTO_TEST_CASE(a_changed_or_cut_plan_fails_its_digest) {
  check_refused(with("quoted", "quotes"), "digest of cudnn_plan");
  check_refused(with("with a newline", "with a"), "digest of cudnn_plan");
  check_refused(with(",\"cudnn_plan_digest\":", ",\"unused\":"), ".unused");
}

BOOST_AUTO_TEST_CASE(a_plan_without_its_digest_is_refused) {
  std::string text = to_json(sample(true));
  const auto at = text.find(",\"cudnn_plan_digest\":");
  BOOST_REQUIRE(at != std::string::npos);
  const auto end = text.find('"', text.find(":\"", at) + 2);
  text.erase(at, end + 1 - at);
  check_refused(text, "cudnn_plan_digest");
}

BOOST_AUTO_TEST_CASE(serialize_before_build_is_refused) {
  dnngraph::Graph g = dnngraph::test::every_node::matmul_bias_relu();
  const auto document = g.serialize();
  BOOST_REQUIRE(!document.has_value());
  BOOST_TEST((document.error().code == ErrorCode::NotBuilt));
}

BOOST_AUTO_TEST_CASE(deserialize_without_a_handle_is_refused) {
  dnngraph::Graph g = dnngraph::test::every_node::matmul_bias_relu();
  const dnngraph::Handle empty;
  const auto ok = g.deserialize(empty, to_json(sample(true)));
  BOOST_REQUIRE(!ok.has_value());
  BOOST_TEST((ok.error().code == ErrorCode::InvalidHandle));
  BOOST_TEST(!g.is_built());
}

BOOST_AUTO_TEST_SUITE_END()
