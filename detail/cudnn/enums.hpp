// The API's enums as cuDNN sees them (internal to api/): each enum has one table in enums.cpp
// (name, cuDNN value and what else its users ask: element size, arity, family), and every
// conversion, name and check below reads that table. Adding an enumerator is one row.
#pragma once

#include "api/node_attributes.hpp"
#include "api/types.hpp"

#include <cudnn.h>

namespace dnngraph::detail {

[[nodiscard]] cudnnDataType_t to_cudnn(DataType type) noexcept;
[[nodiscard]] cudnnPointwiseMode_t to_cudnn(PointwiseMode mode) noexcept;
[[nodiscard]] cudnnBackendHeurMode_t to_cudnn(HeuristicMode mode) noexcept;
[[nodiscard]] cudnnConvolutionMode_t to_cudnn(ConvolutionMode mode) noexcept;
[[nodiscard]] cudnnReduceTensorOp_t to_cudnn(ReductionMode mode) noexcept;
[[nodiscard]] cudnnBackendNormFwdPhase_t to_cudnn(NormFwdPhase phase) noexcept;
[[nodiscard]] cudnnResampleMode_t to_cudnn(ResampleMode mode) noexcept;

// Types a numeric operand may have (Boolean is for logical operands and predicates; Double and
// Int64 are index and host types no fused engine takes).
[[nodiscard]] bool is_numeric(DataType type) noexcept;

// What a pointwise mode computes, as far as checks and lowering care.
enum class PointwiseFamily : std::uint8_t {
  Arithmetic,  // x op b
  Math,        // f(x)
  Activation,  // forward activations f(x)
  Comparison,  // x cmp b: Boolean output unless set
  Logical,     // Boolean operands and output
  Backward,    // dX = dY * f'(X), operands (dY, X)
  Select,      // t ? x : b
};
[[nodiscard]] PointwiseFamily family(PointwiseMode mode) noexcept;

}  // namespace dnngraph::detail
