// A built plan as a document (internal to api/): what Graph::serialize() writes and
// Graph::deserialize() reads back — the cuDNN version and GPU it was made with, the graph's
// key, the engine config and cuDNN's own plan document (CUDNN_ATTR_EXECUTION_PLAN_JSON_
// REPRESENTATION) when the engine gave one. The parse refuses anything but what to_json writes;
// cuDNN's part is checked against the digest written beside it (truncation, a changed byte),
// not against a schema of cuDNN's: load documents your own processes wrote.
#pragma once

#include "api/error.hpp"
#include "api/plan.hpp"
#include "api/types.hpp"
#include "detail/common/cuda_driver.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

struct PlanDocument {
  static constexpr std::string_view format = "dnngraph-plan";
  static constexpr std::int64_t format_version = 1;
  // Larger texts are refused before parsing (cuDNN's plan documents measured on the H200 are
  // far smaller; a runtime-compiled kernel's binary is what makes them large).
  static constexpr std::size_t max_bytes = std::size_t{256} << 20U;

  std::int64_t cudnn_version = 0;  // backend::runtime_version() where it was made
  GpuIdentity gpu;
  std::string key;  // Graph::key() of the graph built
  bool dynamic_shape = false;
  HeuristicMode mode = HeuristicMode::A;
  EngineChoice engine;
  std::vector<NumericalNote> numerical_notes;  // what cuDNN said of the engine
  std::vector<BehaviorNote> behavior_notes;
  std::optional<std::string> cudnn_plan;  // cuDNN's plan document, when the engine gave one
};

[[nodiscard]] std::string to_json(const PlanDocument& document);
// InvalidJson naming the member and what was expected and given, for anything to_json would
// not have written (or a cuDNN part whose digest does not match).
[[nodiscard]] Result<PlanDocument> parse_plan_document(std::string_view text);

}  // namespace dnngraph::detail
