// backend::EngineConfig: CUDNN_BACKEND_ENGINECFG_DESCRIPTOR (an engine plus its knob choices).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine.hpp"
#include "backend/knob_choice.hpp"

#include <vector>

namespace dnngraph::backend {

class EngineConfig final : public Descriptor {
 public:
  [[nodiscard]] static Expected<EngineConfig> create() {
    return create_as<EngineConfig>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_engine(const Engine& engine) {
    return set_descriptor(engine_attribute, engine);
  }
  [[nodiscard]] Expected<void> set_knob_choices(std::span<const KnobChoice> knobs) {
    return set_descriptors(knob_choices_attribute, natives(knobs));
  }
  // A copy of the engine this config uses.
  [[nodiscard]] Expected<Engine> engine() const;
  // Copies of the knob choices this config sets.
  [[nodiscard]] Expected<std::vector<KnobChoice>> knob_choices() const;

 private:
  friend class Descriptor;  // create_as
  explicit EngineConfig(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  static constexpr Attribute engine_attribute = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINECFG_ENGINE);
  static constexpr Attribute knob_choices_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
};

}  // namespace dnngraph::backend
