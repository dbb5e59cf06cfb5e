// What Graph's builders (api/graph*.cpp) share to name what the user left unnamed: a node after
// its kind and position, and a composite node's by-value scalars after the node.
#pragma once

#include "api/graph.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"
#include "detail/nodes/node.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace dnngraph::detail {

// An unnamed node is called after its kind and position: "matmul_3".
template <class Attributes>
void name_node(Attributes& attributes, NodeKind kind, std::size_t index) {
  if (attributes.name().empty()) {
    attributes.set_name(std::string(name_of(kind)) + "_" + std::to_string(index));
  }
}

// A composite node's by-value Float scalar "<node>::<what>": a graph input the variant pack
// carries like any other.
inline std::shared_ptr<TensorAttributes> node_scalar(Graph& g, const std::string& node,
                                                     const char* what, float value) {
  return g.tensor(TensorAttributes()
                      .set_name(node + "::" + what)
                      .set_value(value)
                      .set_data_type(DataType::Float));
}

}  // namespace dnngraph::detail
