// Lowering support implementation.
#include "api/lowering.hpp"

#include "api/cudnn_error.hpp"

namespace dnngraph::detail {

cudnnDataType_t to_cudnn(DataType type) noexcept {
  switch (type) {
    case DataType::Half: return CUDNN_DATA_HALF;
    case DataType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DataType::Float: return CUDNN_DATA_FLOAT;
    case DataType::Double: return CUDNN_DATA_DOUBLE;
    case DataType::Int8: return CUDNN_DATA_INT8;
    case DataType::Int32: return CUDNN_DATA_INT32;
    case DataType::Int64: return CUDNN_DATA_INT64;
    case DataType::Uint8: return CUDNN_DATA_UINT8;
    case DataType::Boolean: return CUDNN_DATA_BOOLEAN;
    case DataType::Fp8E4M3: return CUDNN_DATA_FP8_E4M3;
    case DataType::Fp8E5M2: return CUDNN_DATA_FP8_E5M2;
  }
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t to_cudnn(PointwiseMode mode) noexcept {
  switch (mode) {
    case PointwiseMode::Add: return CUDNN_POINTWISE_ADD;
    case PointwiseMode::Sub: return CUDNN_POINTWISE_SUB;
    case PointwiseMode::Mul: return CUDNN_POINTWISE_MUL;
    case PointwiseMode::Div: return CUDNN_POINTWISE_DIV;
    case PointwiseMode::Max: return CUDNN_POINTWISE_MAX;
    case PointwiseMode::Min: return CUDNN_POINTWISE_MIN;
    case PointwiseMode::ReluFwd: return CUDNN_POINTWISE_RELU_FWD;
    case PointwiseMode::GeluFwd: return CUDNN_POINTWISE_GELU_FWD;
    case PointwiseMode::SigmoidFwd: return CUDNN_POINTWISE_SIGMOID_FWD;
    case PointwiseMode::TanhFwd: return CUDNN_POINTWISE_TANH_FWD;
    case PointwiseMode::SwishFwd: return CUDNN_POINTWISE_SWISH_FWD;
    case PointwiseMode::Identity: return CUDNN_POINTWISE_IDENTITY;
    case PointwiseMode::AddSquare: return CUDNN_POINTWISE_ADD_SQUARE;
    case PointwiseMode::Mod: return CUDNN_POINTWISE_MOD;
    case PointwiseMode::Pow: return CUDNN_POINTWISE_POW;
    case PointwiseMode::Abs: return CUDNN_POINTWISE_ABS;
    case PointwiseMode::Ceil: return CUDNN_POINTWISE_CEIL;
    case PointwiseMode::Cos: return CUDNN_POINTWISE_COS;
    case PointwiseMode::Exp: return CUDNN_POINTWISE_EXP;
    case PointwiseMode::Floor: return CUDNN_POINTWISE_FLOOR;
    case PointwiseMode::Log: return CUDNN_POINTWISE_LOG;
    case PointwiseMode::Neg: return CUDNN_POINTWISE_NEG;
    case PointwiseMode::Rsqrt: return CUDNN_POINTWISE_RSQRT;
    case PointwiseMode::Sin: return CUDNN_POINTWISE_SIN;
    case PointwiseMode::Sqrt: return CUDNN_POINTWISE_SQRT;
    case PointwiseMode::Tan: return CUDNN_POINTWISE_TAN;
    case PointwiseMode::Erf: return CUDNN_POINTWISE_ERF;
    case PointwiseMode::Reciprocal: return CUDNN_POINTWISE_RECIPROCAL;
    case PointwiseMode::CmpEq: return CUDNN_POINTWISE_CMP_EQ;
    case PointwiseMode::CmpNeq: return CUDNN_POINTWISE_CMP_NEQ;
    case PointwiseMode::CmpGt: return CUDNN_POINTWISE_CMP_GT;
    case PointwiseMode::CmpGe: return CUDNN_POINTWISE_CMP_GE;
    case PointwiseMode::CmpLt: return CUDNN_POINTWISE_CMP_LT;
    case PointwiseMode::CmpLe: return CUDNN_POINTWISE_CMP_LE;
    case PointwiseMode::LogicalAnd: return CUDNN_POINTWISE_LOGICAL_AND;
    case PointwiseMode::LogicalOr: return CUDNN_POINTWISE_LOGICAL_OR;
    case PointwiseMode::LogicalNot: return CUDNN_POINTWISE_LOGICAL_NOT;
    case PointwiseMode::EluFwd: return CUDNN_POINTWISE_ELU_FWD;
    case PointwiseMode::GeluApproxTanhFwd: return CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
    case PointwiseMode::SoftplusFwd: return CUDNN_POINTWISE_SOFTPLUS_FWD;
    case PointwiseMode::ReluBwd: return CUDNN_POINTWISE_RELU_BWD;
    case PointwiseMode::TanhBwd: return CUDNN_POINTWISE_TANH_BWD;
    case PointwiseMode::SigmoidBwd: return CUDNN_POINTWISE_SIGMOID_BWD;
    case PointwiseMode::EluBwd: return CUDNN_POINTWISE_ELU_BWD;
    case PointwiseMode::GeluBwd: return CUDNN_POINTWISE_GELU_BWD;
    case PointwiseMode::GeluApproxTanhBwd: return CUDNN_POINTWISE_GELU_APPROX_TANH_BWD;
    case PointwiseMode::SoftplusBwd: return CUDNN_POINTWISE_SOFTPLUS_BWD;
    case PointwiseMode::SwishBwd: return CUDNN_POINTWISE_SWISH_BWD;
    case PointwiseMode::BinarySelect: return CUDNN_POINTWISE_BINARY_SELECT;
  }
  return CUDNN_POINTWISE_IDENTITY;
}

cudnnBackendHeurMode_t to_cudnn(HeuristicMode mode) noexcept {
  switch (mode) {
    case HeuristicMode::A: return CUDNN_HEUR_MODE_A;
    case HeuristicMode::B: return CUDNN_HEUR_MODE_B;
    case HeuristicMode::Fallback: return CUDNN_HEUR_MODE_FALLBACK;
  }
  return CUDNN_HEUR_MODE_A;
}

cudnnConvolutionMode_t to_cudnn(ConvolutionMode mode) noexcept {
  switch (mode) {
    case ConvolutionMode::CrossCorrelation: return CUDNN_CROSS_CORRELATION;
    case ConvolutionMode::Convolution: return CUDNN_CONVOLUTION;
  }
  return CUDNN_CROSS_CORRELATION;
}

namespace {

backend::Expected<backend::Tensor> make_tensor(const TensorAttributes& t) {
  auto tensor = backend::Tensor::create();
  if (!tensor) {
    return tensor;
  }
  // cuDNN wants 16-byte aligned device buffers for vectorized loads; cudaMalloc gives 256.
  constexpr std::int64_t alignment = 16;
  // Each step runs only if the one before succeeded; the first failure is reported.
  const auto type = t.data_type();
  const auto uid = t.uid();
  if (!type || !uid) {  // validate() settles both before anything is lowered
    return std::unexpected(backend::Status{CUDNN_STATUS_BAD_PARAM,
                                           "lower tensor without a uid "
                                           "or data type (not validated)",
                                           ""});
  }
  auto ok = tensor->set_data_type(to_cudnn(*type));
  if (ok) ok = tensor->set_dimensions(t.dim());
  if (ok) ok = tensor->set_strides(t.stride());
  if (ok) ok = tensor->set_unique_id(*uid);
  if (ok) ok = tensor->set_byte_alignment(alignment);
  if (ok) ok = tensor->set_is_virtual(t.is_virtual());
  if (ok && t.is_pass_by_value()) ok = tensor->set_is_by_value(true);
  if (ok) ok = tensor->finalize();
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return tensor;
}

}  // namespace

Result<void> TensorTable::add(const TensorAttributes& t) {
  auto tensor = make_tensor(t);
  if (!tensor) {
    return std::unexpected(cudnn_error(tensor.error(), "lower tensor " + t.describe()));
  }
  tensors_.insert_or_assign(t.uid().value_or(-1), std::move(*tensor));  // make_tensor checked it
  return {};
}

const backend::Tensor* TensorTable::find(std::int64_t uid) const {
  auto it = tensors_.find(uid);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool TensorTable::all_finalized() const noexcept {
  for (const auto& [uid, tensor] : tensors_) {
    if (!tensor.is_finalized()) {
      return false;
    }
  }
  return true;
}

}  // namespace dnngraph::detail
