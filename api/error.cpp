// ErrorCode names.
#include "api/error.hpp"

namespace dnngraph {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidAttribute: return "InvalidAttribute";
    case ErrorCode::ShapeMismatch: return "ShapeMismatch";
    case ErrorCode::DuplicateUid: return "DuplicateUid";
    case ErrorCode::ForeignTensor: return "ForeignTensor";
    case ErrorCode::UnsupportedDataType: return "UnsupportedDataType";
    case ErrorCode::NotBuilt: return "NotBuilt";
    case ErrorCode::MissingTensor: return "MissingTensor";
    case ErrorCode::NullPointer: return "NullPointer";
    case ErrorCode::InvalidHandle: return "InvalidHandle";
    case ErrorCode::NoEngine: return "NoEngine";
    case ErrorCode::CudnnFailure: return "CudnnFailure";
    case ErrorCode::CudaFailure: return "CudaFailure";
    case ErrorCode::VersionTooOld: return "VersionTooOld";
    case ErrorCode::InvalidState: return "InvalidState";
    case ErrorCode::InvalidJson: return "InvalidJson";
    case ErrorCode::IoFailure: return "IoFailure";
    case ErrorCode::CudnnNotFound: return "CudnnNotFound";
  }
  return "Unknown";
}

}  // namespace dnngraph
