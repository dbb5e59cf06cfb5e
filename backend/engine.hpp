// backend::Engine: CUDNN_BACKEND_ENGINE_DESCRIPTOR (one engine of an operation graph).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/operation_graph.hpp"

#include <algorithm>
#include <vector>

namespace dnngraph::backend {

class Engine final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Engine> create() {
    return create_as<Engine>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const OperationGraph& graph) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_OPERATION_GRAPH), graph);
  }
  [[nodiscard]] Expected<void> set_global_index(std::int64_t index) {
    return set(global_index_attribute, index);
  }
  [[nodiscard]] Expected<std::int64_t> global_index() const {
    return get_one<std::int64_t>(global_index_attribute);
  }
  // The notes cuDNN gives this (finalized) engine: what its numbers and behaviour are like.
  [[nodiscard]] Expected<std::vector<cudnnBackendNumericalNote_t>> numerical_notes() const {
    return notes<cudnnBackendNumericalNote_t>(numerical_note_attribute);
  }
  [[nodiscard]] Expected<std::vector<cudnnBackendBehaviorNote_t>> behavior_notes() const {
    return notes<cudnnBackendBehaviorNote_t>(behavior_note_attribute);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Engine(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  static constexpr Attribute global_index_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  static constexpr Attribute numerical_note_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE);
  static constexpr Attribute behavior_note_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE);

  // A note list: cuDNN fills at most the slots given and reports how many notes there are
  // (cuDNN 9.19 has 10 numerical and 5 behaviour note types; 32 slots leave room for more).
  template <class Note>
  [[nodiscard]] Expected<std::vector<Note>> notes(const Attribute& attribute) const {
    constexpr std::int64_t slots = 32;
    std::vector<Note> out(slots);
    auto count = get(attribute, std::span<Note>(out));
    if (!count) {
      return std::unexpected(std::move(count.error()));
    }
    out.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(*count, 0, slots)));
    return out;
  }
};

}  // namespace dnngraph::backend
