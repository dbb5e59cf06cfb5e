// backend::KnobChoice: CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR (one knob setting of an engine config).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class KnobChoice final : public Descriptor {
 public:
  [[nodiscard]] static Expected<KnobChoice> create() {
    return create_as<KnobChoice>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_knob_type(cudnnBackendKnobType_t type) {
    return set(knob_type_attribute, type);
  }
  [[nodiscard]] Expected<void> set_knob_value(std::int64_t value) {
    return set(knob_value_attribute, value);
  }
  [[nodiscard]] Expected<cudnnBackendKnobType_t> knob_type() const {
    return get_one<cudnnBackendKnobType_t>(knob_type_attribute);
  }
  [[nodiscard]] Expected<std::int64_t> knob_value() const {
    return get_one<std::int64_t>(knob_value_attribute);
  }

 private:
  friend class Descriptor;  // create_as
  explicit KnobChoice(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  static constexpr Attribute knob_type_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE);
  static constexpr Attribute knob_value_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE);
};

}  // namespace dnngraph::backend
