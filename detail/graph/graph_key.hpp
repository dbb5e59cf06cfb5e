// Graph::key() and Graph::topology_key() (internal to api/): a digest of a lowering's attribute
// log and the graph settings the operation graph takes from the Graph.
#pragma once

#include "backend/attribute_log.hpp"

#include <string>

namespace dnngraph::detail {

struct KeySettings {
  bool dynamic_shape = false;
  bool override_shape = false;
};

// 32 hex characters: two 64-bit FNV-1a digests (different offset bases) of the log's entries in
// order and the settings. with_shapes false: tensor dimensions left out and tensor strides
// replaced by their order (the dimension indices from the largest stride down, ties by index),
// so the shapes of one topology have one key.
[[nodiscard]] std::string graph_key(const backend::AttributeLog& log, const KeySettings& settings,
                                    bool with_shapes);

}  // namespace dnngraph::detail
