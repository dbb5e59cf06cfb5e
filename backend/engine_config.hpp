// backend::EngineConfig: CUDNN_BACKEND_ENGINECFG_DESCRIPTOR (an engine plus its knob choices).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine.hpp"
#include "backend/knob_choice.hpp"

#include <vector>

namespace dnngraph::backend {

class EngineConfig : public Descriptor {
 public:
  explicit EngineConfig(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<EngineConfig> create() {
    return create_as<EngineConfig>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_engine(const Engine& engine) {
    return set_descriptor(CUDNN_ATTR_ENGINECFG_ENGINE, "CUDNN_ATTR_ENGINECFG_ENGINE", engine);
  }
  [[nodiscard]] Expected<void> set_knob_choices(std::span<const cudnnBackendDescriptor_t> knobs) {
    return set_descriptors(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, "CUDNN_ATTR_ENGINECFG_KNOB_CHOICES",
                           knobs);
  }
  // A copy of the engine this config uses.
  [[nodiscard]] Expected<Engine> engine() const;
  // Copies of the knob choices this config sets.
  [[nodiscard]] Expected<std::vector<KnobChoice>> knob_choices() const;
};

}  // namespace dnngraph::backend
