// The tables behind every API enum: one row per enumerator, in declaration order (checked at
// compile time), read by the names, checks and cuDNN conversions.
#include "detail/cudnn/enums.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace dnngraph {

namespace {

// True when row i holds enumerator i: rows are then found by index.
template <class Table>
constexpr bool in_declaration_order(const Table& table) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (static_cast<std::size_t>(table[i].value) != i) {
      return false;
    }
  }
  return true;
}

// The row of v, or null for a value that is no enumerator (an integer cast to the enum).
template <class Table, class E>
constexpr const typename Table::value_type* row(const Table& table, E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < table.size() ? &table[i] : nullptr;
}

template <class E, class Cudnn>
struct Row {
  E value;
  std::string_view name;
  Cudnn cudnn;
};

struct DataTypeRow {
  DataType value;
  std::string_view name;
  cudnnDataType_t cudnn;
  std::int64_t bytes;
  bool numeric;
};

constexpr std::array data_types{
    DataTypeRow{DataType::Half, "Half", CUDNN_DATA_HALF, 2, true},
    DataTypeRow{DataType::BFloat16, "BFloat16", CUDNN_DATA_BFLOAT16, 2, true},
    DataTypeRow{DataType::Float, "Float", CUDNN_DATA_FLOAT, 4, true},
    DataTypeRow{DataType::Double, "Double", CUDNN_DATA_DOUBLE, 8, false},
    DataTypeRow{DataType::Int8, "Int8", CUDNN_DATA_INT8, 1, true},
    DataTypeRow{DataType::Int32, "Int32", CUDNN_DATA_INT32, 4, true},
    DataTypeRow{DataType::Int64, "Int64", CUDNN_DATA_INT64, 8, false},
    DataTypeRow{DataType::Uint8, "Uint8", CUDNN_DATA_UINT8, 1, true},
    DataTypeRow{DataType::Boolean, "Boolean", CUDNN_DATA_BOOLEAN, 1, false},
    DataTypeRow{DataType::Fp8E4M3, "Fp8E4M3", CUDNN_DATA_FP8_E4M3, 1, true},
    DataTypeRow{DataType::Fp8E5M2, "Fp8E5M2", CUDNN_DATA_FP8_E5M2, 1, true},
};
static_assert(in_declaration_order(data_types) && data_types.back().value == DataType::Fp8E5M2);

constexpr std::array heuristic_modes{
    Row<HeuristicMode, cudnnBackendHeurMode_t>{HeuristicMode::A, "A", CUDNN_HEUR_MODE_A},
    Row<HeuristicMode, cudnnBackendHeurMode_t>{HeuristicMode::B, "B", CUDNN_HEUR_MODE_B},
    Row<HeuristicMode, cudnnBackendHeurMode_t>{HeuristicMode::Fallback, "Fallback",
                                               CUDNN_HEUR_MODE_FALLBACK},
};
static_assert(in_declaration_order(heuristic_modes) &&
              heuristic_modes.back().value == HeuristicMode::Fallback);

struct PointwiseRow {
  PointwiseMode value;
  std::string_view name;
  cudnnPointwiseMode_t cudnn;
  int arity;
  detail::PointwiseFamily family;
};

using detail::PointwiseFamily;
constexpr std::array<PointwiseRow, 49> pointwise_modes{{
    {PointwiseMode::Add, "Add", CUDNN_POINTWISE_ADD, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Sub, "Sub", CUDNN_POINTWISE_SUB, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Mul, "Mul", CUDNN_POINTWISE_MUL, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Div, "Div", CUDNN_POINTWISE_DIV, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Max, "Max", CUDNN_POINTWISE_MAX, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Min, "Min", CUDNN_POINTWISE_MIN, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::ReluFwd, "ReluFwd", CUDNN_POINTWISE_RELU_FWD, 1, PointwiseFamily::Activation},
    {PointwiseMode::GeluFwd, "GeluFwd", CUDNN_POINTWISE_GELU_FWD, 1, PointwiseFamily::Activation},
    {PointwiseMode::SigmoidFwd, "SigmoidFwd", CUDNN_POINTWISE_SIGMOID_FWD, 1,
     PointwiseFamily::Activation},
    {PointwiseMode::TanhFwd, "TanhFwd", CUDNN_POINTWISE_TANH_FWD, 1, PointwiseFamily::Activation},
    {PointwiseMode::SwishFwd, "SwishFwd", CUDNN_POINTWISE_SWISH_FWD, 1,
     PointwiseFamily::Activation},
    {PointwiseMode::Identity, "Identity", CUDNN_POINTWISE_IDENTITY, 1, PointwiseFamily::Math},
    {PointwiseMode::AddSquare, "AddSquare", CUDNN_POINTWISE_ADD_SQUARE, 2,
     PointwiseFamily::Arithmetic},
    {PointwiseMode::Mod, "Mod", CUDNN_POINTWISE_MOD, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Pow, "Pow", CUDNN_POINTWISE_POW, 2, PointwiseFamily::Arithmetic},
    {PointwiseMode::Abs, "Abs", CUDNN_POINTWISE_ABS, 1, PointwiseFamily::Math},
    {PointwiseMode::Ceil, "Ceil", CUDNN_POINTWISE_CEIL, 1, PointwiseFamily::Math},
    {PointwiseMode::Cos, "Cos", CUDNN_POINTWISE_COS, 1, PointwiseFamily::Math},
    {PointwiseMode::Exp, "Exp", CUDNN_POINTWISE_EXP, 1, PointwiseFamily::Math},
    {PointwiseMode::Floor, "Floor", CUDNN_POINTWISE_FLOOR, 1, PointwiseFamily::Math},
    {PointwiseMode::Log, "Log", CUDNN_POINTWISE_LOG, 1, PointwiseFamily::Math},
    {PointwiseMode::Neg, "Neg", CUDNN_POINTWISE_NEG, 1, PointwiseFamily::Math},
    {PointwiseMode::Rsqrt, "Rsqrt", CUDNN_POINTWISE_RSQRT, 1, PointwiseFamily::Math},
    {PointwiseMode::Sin, "Sin", CUDNN_POINTWISE_SIN, 1, PointwiseFamily::Math},
    {PointwiseMode::Sqrt, "Sqrt", CUDNN_POINTWISE_SQRT, 1, PointwiseFamily::Math},
    {PointwiseMode::Tan, "Tan", CUDNN_POINTWISE_TAN, 1, PointwiseFamily::Math},
    {PointwiseMode::Erf, "Erf", CUDNN_POINTWISE_ERF, 1, PointwiseFamily::Math},
    {PointwiseMode::Reciprocal, "Reciprocal", CUDNN_POINTWISE_RECIPROCAL, 1, PointwiseFamily::Math},
    {PointwiseMode::CmpEq, "CmpEq", CUDNN_POINTWISE_CMP_EQ, 2, PointwiseFamily::Comparison},
    {PointwiseMode::CmpNeq, "CmpNeq", CUDNN_POINTWISE_CMP_NEQ, 2, PointwiseFamily::Comparison},
    {PointwiseMode::CmpGt, "CmpGt", CUDNN_POINTWISE_CMP_GT, 2, PointwiseFamily::Comparison},
    {PointwiseMode::CmpGe, "CmpGe", CUDNN_POINTWISE_CMP_GE, 2, PointwiseFamily::Comparison},
    {PointwiseMode::CmpLt, "CmpLt", CUDNN_POINTWISE_CMP_LT, 2, PointwiseFamily::Comparison},
    {PointwiseMode::CmpLe, "CmpLe", CUDNN_POINTWISE_CMP_LE, 2, PointwiseFamily::Comparison},
    {PointwiseMode::LogicalAnd, "LogicalAnd", CUDNN_POINTWISE_LOGICAL_AND, 2,
     PointwiseFamily::Logical},
    {PointwiseMode::LogicalOr, "LogicalOr", CUDNN_POINTWISE_LOGICAL_OR, 2,
     PointwiseFamily::Logical},
    {PointwiseMode::LogicalNot, "LogicalNot", CUDNN_POINTWISE_LOGICAL_NOT, 1,
     PointwiseFamily::Logical},
    {PointwiseMode::EluFwd, "EluFwd", CUDNN_POINTWISE_ELU_FWD, 1, PointwiseFamily::Activation},
    {PointwiseMode::GeluApproxTanhFwd, "GeluApproxTanhFwd", CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, 1,
     PointwiseFamily::Activation},
    {PointwiseMode::SoftplusFwd, "SoftplusFwd", CUDNN_POINTWISE_SOFTPLUS_FWD, 1,
     PointwiseFamily::Activation},
    {PointwiseMode::ReluBwd, "ReluBwd", CUDNN_POINTWISE_RELU_BWD, 2, PointwiseFamily::Backward},
    {PointwiseMode::TanhBwd, "TanhBwd", CUDNN_POINTWISE_TANH_BWD, 2, PointwiseFamily::Backward},
    {PointwiseMode::SigmoidBwd, "SigmoidBwd", CUDNN_POINTWISE_SIGMOID_BWD, 2,
     PointwiseFamily::Backward},
    {PointwiseMode::EluBwd, "EluBwd", CUDNN_POINTWISE_ELU_BWD, 2, PointwiseFamily::Backward},
    {PointwiseMode::GeluBwd, "GeluBwd", CUDNN_POINTWISE_GELU_BWD, 2, PointwiseFamily::Backward},
    {PointwiseMode::GeluApproxTanhBwd, "GeluApproxTanhBwd", CUDNN_POINTWISE_GELU_APPROX_TANH_BWD, 2,
     PointwiseFamily::Backward},
    {PointwiseMode::SoftplusBwd, "SoftplusBwd", CUDNN_POINTWISE_SOFTPLUS_BWD, 2,
     PointwiseFamily::Backward},
    {PointwiseMode::SwishBwd, "SwishBwd", CUDNN_POINTWISE_SWISH_BWD, 2, PointwiseFamily::Backward},
    {PointwiseMode::BinarySelect, "BinarySelect", CUDNN_POINTWISE_BINARY_SELECT, 3,
     PointwiseFamily::Select},
}};
static_assert(in_declaration_order(pointwise_modes) &&
              pointwise_modes.back().value == PointwiseMode::BinarySelect);

constexpr std::array convolution_modes{
    Row<ConvolutionMode, cudnnConvolutionMode_t>{ConvolutionMode::CrossCorrelation,
                                                 "CrossCorrelation", CUDNN_CROSS_CORRELATION},
    Row<ConvolutionMode, cudnnConvolutionMode_t>{ConvolutionMode::Convolution, "Convolution",
                                                 CUDNN_CONVOLUTION},
};
static_assert(in_declaration_order(convolution_modes) &&
              convolution_modes.back().value == ConvolutionMode::Convolution);

using ReductionRow = Row<ReductionMode, cudnnReduceTensorOp_t>;
constexpr std::array reduction_modes{
    ReductionRow{ReductionMode::Add, "Add", CUDNN_REDUCE_TENSOR_ADD},
    ReductionRow{ReductionMode::Mul, "Mul", CUDNN_REDUCE_TENSOR_MUL},
    ReductionRow{ReductionMode::Min, "Min", CUDNN_REDUCE_TENSOR_MIN},
    ReductionRow{ReductionMode::Max, "Max", CUDNN_REDUCE_TENSOR_MAX},
    ReductionRow{ReductionMode::Amax, "Amax", CUDNN_REDUCE_TENSOR_AMAX},
    ReductionRow{ReductionMode::Avg, "Avg", CUDNN_REDUCE_TENSOR_AVG},
    ReductionRow{ReductionMode::Norm1, "Norm1", CUDNN_REDUCE_TENSOR_NORM1},
    ReductionRow{ReductionMode::Norm2, "Norm2", CUDNN_REDUCE_TENSOR_NORM2},
    ReductionRow{ReductionMode::MulNoZeros, "MulNoZeros", CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS},
};
static_assert(in_declaration_order(reduction_modes) &&
              reduction_modes.back().value == ReductionMode::MulNoZeros);

using PhaseRow = Row<NormFwdPhase, cudnnBackendNormFwdPhase_t>;
constexpr std::array norm_phases{
    PhaseRow{NormFwdPhase::Inference, "Inference", CUDNN_NORM_FWD_INFERENCE},
    PhaseRow{NormFwdPhase::Training, "Training", CUDNN_NORM_FWD_TRAINING},
};
static_assert(in_declaration_order(norm_phases) &&
              norm_phases.back().value == NormFwdPhase::Training);

using ResampleRow = Row<ResampleMode, cudnnResampleMode_t>;
constexpr std::array resample_modes{
    ResampleRow{ResampleMode::MaxPool, "MaxPool", CUDNN_RESAMPLE_MAXPOOL},
    ResampleRow{ResampleMode::AvgPoolIncludePadding, "AvgPoolIncludePadding",
                CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING},
    ResampleRow{ResampleMode::AvgPoolExcludePadding, "AvgPoolExcludePadding",
                CUDNN_RESAMPLE_AVGPOOL_EXCLUDE_PADDING},
};
static_assert(in_declaration_order(resample_modes) &&
              resample_modes.back().value == ResampleMode::AvgPoolExcludePadding);

template <class Table, class E>
std::string_view name_in(const Table& table, E v) noexcept {
  const auto* r = row(table, v);
  return r != nullptr ? r->name : unknown_enumerator;
}

// Lowering never sees an unknown value (validate() refuses them); the first row is a stand-in.
template <class Table, class E>
auto cudnn_in(const Table& table, E v) noexcept {
  const auto* r = row(table, v);
  return r != nullptr ? r->cudnn : table.front().cudnn;
}

}  // namespace

std::string_view to_string(DataType type) noexcept { return name_in(data_types, type); }
std::string_view to_string(HeuristicMode mode) noexcept { return name_in(heuristic_modes, mode); }
std::string_view to_string(PointwiseMode mode) noexcept { return name_in(pointwise_modes, mode); }
std::string_view to_string(ConvolutionMode mode) noexcept {
  return name_in(convolution_modes, mode);
}
std::string_view to_string(ReductionMode mode) noexcept { return name_in(reduction_modes, mode); }
std::string_view to_string(NormFwdPhase phase) noexcept { return name_in(norm_phases, phase); }
std::string_view to_string(ResampleMode mode) noexcept { return name_in(resample_modes, mode); }

bool is_known(DataType type) noexcept { return row(data_types, type) != nullptr; }
bool is_known(HeuristicMode mode) noexcept { return row(heuristic_modes, mode) != nullptr; }
bool is_known(PointwiseMode mode) noexcept { return row(pointwise_modes, mode) != nullptr; }
bool is_known(ConvolutionMode mode) noexcept { return row(convolution_modes, mode) != nullptr; }
bool is_known(ReductionMode mode) noexcept { return row(reduction_modes, mode) != nullptr; }
bool is_known(NormFwdPhase phase) noexcept { return row(norm_phases, phase) != nullptr; }
bool is_known(ResampleMode mode) noexcept { return row(resample_modes, mode) != nullptr; }

std::int64_t size_of(DataType type) noexcept {
  const auto* r = row(data_types, type);
  return r != nullptr ? r->bytes : 0;
}

int arity(PointwiseMode mode) noexcept {
  const auto* r = row(pointwise_modes, mode);
  return r != nullptr ? r->arity : 1;
}

namespace detail {

cudnnDataType_t to_cudnn(DataType type) noexcept { return cudnn_in(data_types, type); }
cudnnPointwiseMode_t to_cudnn(PointwiseMode mode) noexcept {
  return cudnn_in(pointwise_modes, mode);
}
cudnnBackendHeurMode_t to_cudnn(HeuristicMode mode) noexcept {
  return cudnn_in(heuristic_modes, mode);
}
cudnnConvolutionMode_t to_cudnn(ConvolutionMode mode) noexcept {
  return cudnn_in(convolution_modes, mode);
}
cudnnReduceTensorOp_t to_cudnn(ReductionMode mode) noexcept {
  return cudnn_in(reduction_modes, mode);
}
cudnnBackendNormFwdPhase_t to_cudnn(NormFwdPhase phase) noexcept {
  return cudnn_in(norm_phases, phase);
}
cudnnResampleMode_t to_cudnn(ResampleMode mode) noexcept { return cudnn_in(resample_modes, mode); }

bool is_numeric(DataType type) noexcept {
  const auto* r = row(data_types, type);
  return r != nullptr && r->numeric;
}

PointwiseFamily family(PointwiseMode mode) noexcept {
  const auto* r = row(pointwise_modes, mode);
  return r != nullptr ? r->family : PointwiseFamily::Math;
}

}  // namespace detail

}  // namespace dnngraph
