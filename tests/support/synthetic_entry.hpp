// A kernel cache entry made up for tests and the store's stress program: a cache built on the
// CPU has none (no kernel is compiled without a GPU), so entries are added to cuDNN's document.
#pragma once

#include <boost/json.hpp>

#include <cstdint>

namespace dnngraph::testing {

// An entry keyed as cuDNN keys one (the document's operation graph, no knob choices) with an
// empty kernel, as tests/fuzz/corpus/kernel_cache_json/matmul_one_entry.json; from_json takes it.
inline boost::json::object synthetic_entry(const boost::json::value& operation_graph,
                                           std::int64_t engine) {
  return boost::json::object{{"key", boost::json::object{{"type", 0},
                                                         {"engineId", engine},
                                                         {"knobChoices", boost::json::object{}},
                                                         {"operationGraph", operation_graph}}},
                             {"value", boost::json::array{}}};
}

}  // namespace dnngraph::testing
