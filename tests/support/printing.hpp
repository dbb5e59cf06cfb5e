// Lets BOOST_TEST print dnngraph's enums when a comparison fails. Include after
// support/dnngraph.hpp (it names the API's types).
#pragma once

#include <ostream>

namespace dnngraph {

inline std::ostream& boost_test_print_type(std::ostream& out, ErrorCode code) {
  return out << to_string(code);
}

inline std::ostream& boost_test_print_type(std::ostream& out, DataType type) {
  return out << to_string(type);
}

}  // namespace dnngraph
