// Names and sizes of the API enums.
#include "api/types.hpp"

namespace dnngraph {

std::string_view to_string(DataType type) noexcept {
  switch (type) {
    case DataType::Half: return "Half";
    case DataType::BFloat16: return "BFloat16";
    case DataType::Float: return "Float";
    case DataType::Double: return "Double";
    case DataType::Int8: return "Int8";
    case DataType::Int32: return "Int32";
    case DataType::Int64: return "Int64";
    case DataType::Uint8: return "Uint8";
    case DataType::Boolean: return "Boolean";
    case DataType::Fp8E4M3: return "Fp8E4M3";
    case DataType::Fp8E5M2: return "Fp8E5M2";
  }
  return unknown_enumerator;
}

std::string_view to_string(HeuristicMode mode) noexcept {
  switch (mode) {
    case HeuristicMode::A: return "A";
    case HeuristicMode::B: return "B";
    case HeuristicMode::Fallback: return "Fallback";
  }
  return unknown_enumerator;
}

std::string_view to_string(PointwiseMode mode) noexcept {
  switch (mode) {
    case PointwiseMode::Add: return "Add";
    case PointwiseMode::Sub: return "Sub";
    case PointwiseMode::Mul: return "Mul";
    case PointwiseMode::Div: return "Div";
    case PointwiseMode::Max: return "Max";
    case PointwiseMode::Min: return "Min";
    case PointwiseMode::ReluFwd: return "ReluFwd";
    case PointwiseMode::GeluFwd: return "GeluFwd";
    case PointwiseMode::SigmoidFwd: return "SigmoidFwd";
    case PointwiseMode::TanhFwd: return "TanhFwd";
    case PointwiseMode::SwishFwd: return "SwishFwd";
    case PointwiseMode::Identity: return "Identity";
    case PointwiseMode::AddSquare: return "AddSquare";
    case PointwiseMode::Mod: return "Mod";
    case PointwiseMode::Pow: return "Pow";
    case PointwiseMode::Abs: return "Abs";
    case PointwiseMode::Ceil: return "Ceil";
    case PointwiseMode::Cos: return "Cos";
    case PointwiseMode::Exp: return "Exp";
    case PointwiseMode::Floor: return "Floor";
    case PointwiseMode::Log: return "Log";
    case PointwiseMode::Neg: return "Neg";
    case PointwiseMode::Rsqrt: return "Rsqrt";
    case PointwiseMode::Sin: return "Sin";
    case PointwiseMode::Sqrt: return "Sqrt";
    case PointwiseMode::Tan: return "Tan";
    case PointwiseMode::Erf: return "Erf";
    case PointwiseMode::Reciprocal: return "Reciprocal";
    case PointwiseMode::CmpEq: return "CmpEq";
    case PointwiseMode::CmpNeq: return "CmpNeq";
    case PointwiseMode::CmpGt: return "CmpGt";
    case PointwiseMode::CmpGe: return "CmpGe";
    case PointwiseMode::CmpLt: return "CmpLt";
    case PointwiseMode::CmpLe: return "CmpLe";
    case PointwiseMode::LogicalAnd: return "LogicalAnd";
    case PointwiseMode::LogicalOr: return "LogicalOr";
    case PointwiseMode::LogicalNot: return "LogicalNot";
    case PointwiseMode::EluFwd: return "EluFwd";
    case PointwiseMode::GeluApproxTanhFwd: return "GeluApproxTanhFwd";
    case PointwiseMode::SoftplusFwd: return "SoftplusFwd";
    case PointwiseMode::ReluBwd: return "ReluBwd";
    case PointwiseMode::TanhBwd: return "TanhBwd";
    case PointwiseMode::SigmoidBwd: return "SigmoidBwd";
    case PointwiseMode::EluBwd: return "EluBwd";
    case PointwiseMode::GeluBwd: return "GeluBwd";
    case PointwiseMode::GeluApproxTanhBwd: return "GeluApproxTanhBwd";
    case PointwiseMode::SoftplusBwd: return "SoftplusBwd";
    case PointwiseMode::SwishBwd: return "SwishBwd";
    case PointwiseMode::BinarySelect: return "BinarySelect";
  }
  return unknown_enumerator;
}

std::string_view to_string(ConvolutionMode mode) noexcept {
  switch (mode) {
    case ConvolutionMode::CrossCorrelation: return "CrossCorrelation";
    case ConvolutionMode::Convolution: return "Convolution";
  }
  return unknown_enumerator;
}

// Each to_string names every enumerator (the compiler checks that its switch is complete), so it
// is also the one list of what is known.
bool is_known(DataType type) noexcept { return to_string(type) != unknown_enumerator; }
bool is_known(HeuristicMode mode) noexcept { return to_string(mode) != unknown_enumerator; }
bool is_known(PointwiseMode mode) noexcept { return to_string(mode) != unknown_enumerator; }
bool is_known(ConvolutionMode mode) noexcept { return to_string(mode) != unknown_enumerator; }

std::int64_t size_of(DataType type) noexcept {
  switch (type) {
    case DataType::Half:
    case DataType::BFloat16: return 2;
    case DataType::Float:
    case DataType::Int32: return 4;
    case DataType::Double:
    case DataType::Int64: return 8;
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Boolean:
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2: return 1;
  }
  return 0;
}

int arity(PointwiseMode mode) noexcept {
  switch (mode) {
    case PointwiseMode::Add:
    case PointwiseMode::AddSquare:
    case PointwiseMode::Sub:
    case PointwiseMode::Mul:
    case PointwiseMode::Div:
    case PointwiseMode::Max:
    case PointwiseMode::Min:
    case PointwiseMode::Mod:
    case PointwiseMode::Pow:
    case PointwiseMode::CmpEq:
    case PointwiseMode::CmpNeq:
    case PointwiseMode::CmpGt:
    case PointwiseMode::CmpGe:
    case PointwiseMode::CmpLt:
    case PointwiseMode::CmpLe:
    case PointwiseMode::LogicalAnd:
    case PointwiseMode::LogicalOr:
    case PointwiseMode::ReluBwd:
    case PointwiseMode::TanhBwd:
    case PointwiseMode::SigmoidBwd:
    case PointwiseMode::EluBwd:
    case PointwiseMode::GeluBwd:
    case PointwiseMode::GeluApproxTanhBwd:
    case PointwiseMode::SoftplusBwd:
    case PointwiseMode::SwishBwd: return 2;
    case PointwiseMode::BinarySelect: return 3;
    default: return 1;
  }
}

}  // namespace dnngraph
