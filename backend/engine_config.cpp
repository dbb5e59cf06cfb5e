// backend::EngineConfig getters.
#include "backend/engine_config.hpp"

#include <algorithm>

namespace dnngraph::backend {

Expected<Engine> EngineConfig::engine() const {
  auto engine = Engine::create();
  if (!engine) {
    return engine;
  }
  cudnnBackendDescriptor_t raw = engine->native();
  auto got = get_descriptors(engine_attribute, std::span<cudnnBackendDescriptor_t>(&raw, 1));
  if (!got) {
    return std::unexpected(std::move(got.error()));
  }
  return engine;
}

Expected<std::vector<KnobChoice>> EngineConfig::knob_choices() const {
  // cuDNN has at most CUDNN_KNOB_TYPE_COUNTS knobs; ask for that many slots.
  constexpr std::int64_t max_knobs = CUDNN_KNOB_TYPE_COUNTS;
  std::vector<KnobChoice> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  knobs.reserve(max_knobs);
  raw.reserve(max_knobs);
  for (std::int64_t i = 0; i < max_knobs; ++i) {
    auto knob = KnobChoice::create();
    if (!knob) {
      return std::unexpected(std::move(knob.error()));
    }
    raw.push_back(knob->native());
    knobs.push_back(std::move(*knob));
  }
  auto count = get_descriptors(knob_choices_attribute, std::span<cudnnBackendDescriptor_t>(raw));
  if (!count) {
    return std::unexpected(std::move(count.error()));
  }
  knobs.erase(knobs.begin() + std::min(*count, max_knobs), knobs.end());
  return knobs;
}

}  // namespace dnngraph::backend
