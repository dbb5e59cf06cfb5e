// Small helpers the tests of the API share: tensors by name, and the outcome of validate() and
// lower() required or inspected. Include after support/dnngraph.hpp (it names the API's
// types) and after <boost/test/unit_test.hpp>.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::test {

inline TensorAttributes tensor(std::string name, std::int64_t uid, std::vector<std::int64_t> dims) {
  return TensorAttributes().set_name(std::move(name)).set_uid(uid).set_dim(std::move(dims));
}

inline TensorAttributes tensor(std::string name, std::vector<std::int64_t> dims) {
  return TensorAttributes().set_name(std::move(name)).set_dim(std::move(dims));
}

// An input of g with channels-last strides (NHWC for images, [C, 1, C, C] for [1, C, 1, 1]), of
// `type` where given, else the graph's io type.
inline std::shared_ptr<TensorAttributes> channels_last_input(
    Graph& g, std::string name, std::int64_t uid, const std::vector<std::int64_t>& dims,
    std::optional<DataType> type = std::nullopt) {
  TensorAttributes t = tensor(std::move(name), uid, dims);
  t.set_stride(channels_last_strides(dims));
  if (type) {
    t.set_data_type(*type);
  }
  return g.tensor(t);
}

// The error validate() returns; the test stops if validate() succeeds.
inline Error validation_error(Graph& g) {
  auto validated = g.validate();
  BOOST_TEST_REQUIRE(!validated.has_value());
  BOOST_TEST_MESSAGE(validated.error().message);
  return validated.error();
}

inline void require_valid(Graph& g) {
  auto validated = g.validate();
  BOOST_TEST_REQUIRE(validated.has_value(), (validated ? "" : validated.error().message));
}

inline LoweringSummary require_lowered(Graph& g) {
  auto lowered = g.lower();
  BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
  return *lowered;
}

// For BOOST_TEST: the message names `part`, and the failure shows the whole message.
inline boost::test_tools::assertion_result mentions(const Error& error, std::string_view part) {
  boost::test_tools::assertion_result result(error.message.find(part) != std::string::npos);
  result.message() << "message \"" << error.message << "\" does not mention \"" << part << "\"";
  return result;
}

// Lists of backend operation names (LoweringSummary::backend_operations), as a composite node's
// lowering tests compare them: the parts in order, and the list as a message shows it.
using OperationNames = std::vector<std::string>;
inline OperationNames concat(std::initializer_list<OperationNames> parts) {
  OperationNames all;
  for (const OperationNames& part : parts) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}
inline std::string joined(const OperationNames& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

}  // namespace dnngraph::test
