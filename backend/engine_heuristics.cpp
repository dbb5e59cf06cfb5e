// backend::EngineHeuristics::results: ask for the count, then fill that many config descriptors.
#include "backend/engine_heuristics.hpp"

#include <algorithm>

namespace dnngraph::backend {

Expected<std::vector<EngineConfig>> EngineHeuristics::results() const {
  auto count = get_raw(results_attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
  if (!count) {
    return std::unexpected(std::move(count.error()));
  }
  std::vector<EngineConfig> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  configs.reserve(static_cast<std::size_t>(*count));
  raw.reserve(static_cast<std::size_t>(*count));
  for (std::int64_t i = 0; i < *count; ++i) {
    auto config = EngineConfig::create();
    if (!config) {
      return std::unexpected(std::move(config.error()));
    }
    raw.push_back(config->native());
    configs.push_back(std::move(*config));
  }
  auto filled = get_descriptors(results_attribute, std::span<cudnnBackendDescriptor_t>(raw));
  if (!filled) {
    return std::unexpected(std::move(filled.error()));
  }
  configs.erase(configs.begin() + std::min(*filled, *count), configs.end());
  return configs;
}

}  // namespace dnngraph::backend
