// backend::KnobChoice: CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR (one knob setting of an engine config).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class KnobChoice : public Descriptor {
 public:
  explicit KnobChoice(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<KnobChoice> create() {
    return create_as<KnobChoice>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_knob_type(cudnnBackendKnobType_t type) {
    return set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, "CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE", type);
  }
  [[nodiscard]] Expected<void> set_knob_value(std::int64_t value) {
    return set(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, "CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE", value);
  }
  [[nodiscard]] Expected<cudnnBackendKnobType_t> knob_type() const {
    return get_one<cudnnBackendKnobType_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                           "CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE");
  }
  [[nodiscard]] Expected<std::int64_t> knob_value() const {
    return get_one<std::int64_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                 "CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE");
  }
};

}  // namespace dnngraph::backend
