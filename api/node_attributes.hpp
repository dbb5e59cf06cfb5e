// Attributes of graph nodes (one struct per node kind), with chainable setters.
#pragma once

#include "api/types.hpp"

#include <optional>
#include <string>

namespace dnngraph {

class MatmulAttributes {
 public:
  MatmulAttributes& set_name(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  // Accumulation type; defaults to the graph's compute data type, then Float.
  MatmulAttributes& set_compute_data_type(DataType type) {
    compute_data_type_ = type;
    return *this;
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::optional<DataType> compute_data_type() const noexcept {
    return compute_data_type_;
  }

 private:
  std::string name_;
  std::optional<DataType> compute_data_type_;
};

class PointwiseAttributes {
 public:
  PointwiseAttributes& set_name(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  PointwiseAttributes& set_mode(PointwiseMode mode) {
    mode_ = mode;
    return *this;
  }
  // Math precision; defaults to the graph's compute data type, then Float.
  PointwiseAttributes& set_compute_data_type(DataType type) {
    compute_data_type_ = type;
    return *this;
  }
  // SwishFwd only: x * sigmoid(beta * x).
  PointwiseAttributes& set_swish_beta(double beta) {
    swish_beta_ = beta;
    return *this;
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::optional<PointwiseMode> mode() const noexcept { return mode_; }
  [[nodiscard]] std::optional<DataType> compute_data_type() const noexcept {
    return compute_data_type_;
  }
  [[nodiscard]] std::optional<double> swish_beta() const noexcept { return swish_beta_; }

 private:
  std::string name_;
  std::optional<PointwiseMode> mode_;
  std::optional<DataType> compute_data_type_;
  std::optional<double> swish_beta_;
};

}  // namespace dnngraph
