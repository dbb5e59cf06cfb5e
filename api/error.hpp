// dnngraph::Error and Result<T>: every fallible call of the API returns a value, never throws.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace dnngraph {

enum class ErrorCode : std::uint8_t {
  InvalidAttribute,     // a tensor or node attribute has a value that cannot be right
  ShapeMismatch,        // shapes of connected tensors disagree
  DuplicateUid,         // two tensors of one graph share a uid
  ForeignTensor,        // a tensor of another graph (or none) was used
  UnsupportedDataType,  // a data type the operation or cuDNN cannot take
  NotBuilt,             // execute/query before a successful build
  MissingTensor,        // the variant pack lacks a uid the plan needs
  NullPointer,          // a device pointer or workspace that must not be null is
  InvalidHandle,        // an empty Handle
  NoEngine,             // heuristics found no plan that finalizes
  CudnnFailure,         // a cuDNN call failed; the message carries its status and last error
  CudaFailure,          // a CUDA runtime call failed
  VersionTooOld,        // the feature needs a newer cuDNN than the one loaded
  InvalidState,         // the call is not allowed in the object's current state
  InvalidJson,          // a serialized document was rejected before it reached cuDNN
  IoFailure,            // a file or folder could not be read, written, renamed or locked
  CudnnNotFound,        // no usable libcudnn.so.9 could be loaded; the message says where it looked
};

[[nodiscard]] std::string_view to_string(ErrorCode code) noexcept;

struct [[nodiscard]] Error {
  ErrorCode code;
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

[[nodiscard]] inline std::unexpected<Error> make_error(ErrorCode code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

}  // namespace dnngraph
