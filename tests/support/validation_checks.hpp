// What the node tests check of validate() beyond graph_checks.hpp: a refusal's code and every
// part of its message, and the gate of a node kind that needs a cuDNN capability. Include after
// support/dnngraph.hpp (it names the API's types, CudnnCapability among them) and
// support/graph_checks.hpp.
#pragma once

#include "support/printing.hpp"

#include <initializer_list>
#include <string_view>

namespace dnngraph::test {

// validate() fails with `code` and a message naming each of `parts`.
inline void refused(Graph& g, ErrorCode code, std::initializer_list<std::string_view> parts) {
  const Error error = validation_error(g);
  BOOST_TEST(error.code == code);
  for (const std::string_view part : parts) {
    BOOST_TEST(mentions(error, part));
  }
}

// A node kind gated on a cuDNN capability: g validates where the loaded cuDNN offers it, and
// fails with VersionTooOld naming the version where it does not ("needs cuDNN >= 9.1.0").
inline void validates_where_offered(Graph& g, CudnnCapability capability, std::string_view needs) {
  const auto validated = g.validate();
  if (cudnn_offers(capability)) {
    BOOST_TEST(validated.has_value(), (validated ? "" : validated.error().message));
  } else {
    BOOST_REQUIRE(!validated.has_value());
    BOOST_TEST(validated.error().code == ErrorCode::VersionTooOld);
    BOOST_TEST(mentions(validated.error(), needs));
  }
}

}  // namespace dnngraph::test
