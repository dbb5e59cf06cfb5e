// What every node's attributes class derives from: NodeAttributes<Self>, a name and a compute
// type with chainable setters. The attributes of each node kind are in node_attributes.hpp (and
// the norm and attention headers it includes).
#pragma once

#include "api/tensor_attributes.hpp"
#include "api/types.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph {

template <class Derived>
class ConvolutionAttributes;
template <class Self>
class NormAttributes;
template <class Self>
class AttentionScoreAttributes;
template <class Self>
class AttentionAttributes;
template <class Self>
class ResampleWindowAttributes;
template <class Self>
class BatchStatisticsAttributes;

// What every node's attributes have: a name (in errors and LoweringSummary; a default from the
// node kind and index when empty) and a compute type (the math or accumulation type; unset, the
// graph's compute data type, then Float). Self is the attributes class, so setters chain.
template <class Self>
class NodeAttributes {
 public:
  Self& set_name(std::string name) {
    name_ = std::move(name);
    return self();
  }
  Self& set_compute_data_type(DataType type) {
    compute_data_type_ = type;
    return self();
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::optional<DataType> compute_data_type() const noexcept {
    return compute_data_type_;
  }

 private:
  // Only Self (and the shared bases of the convolution, normalization and attention attributes)
  // can make one: a NodeAttributes<A> never stands in for another type.
  NodeAttributes() = default;
  friend Self;
  friend class ConvolutionAttributes<Self>;
  friend class NormAttributes<Self>;
  friend class AttentionScoreAttributes<Self>;
  friend class AttentionAttributes<Self>;
  friend class ResampleWindowAttributes<Self>;
  friend class BatchStatisticsAttributes<Self>;
  Self& self() noexcept { return static_cast<Self&>(*this); }

  std::string name_;
  std::optional<DataType> compute_data_type_;
};

}  // namespace dnngraph
