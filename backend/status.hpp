// backend::Status: the outcome of one cuDNN call, with what was being done and cuDNN's own words.
#pragma once

#include <cudnn.h>

#include <expected>
#include <string>
#include <string_view>

namespace dnngraph::backend {

struct [[nodiscard]] Status {
  cudnnStatus_t code = CUDNN_STATUS_SUCCESS;
  std::string context;     // the call or attribute that failed, e.g. "finalize ExecutionPlan"
  std::string last_error;  // cudnnGetLastErrorString() right after the failure

  [[nodiscard]] bool ok() const noexcept { return code == CUDNN_STATUS_SUCCESS; }
  // "<context>: <CUDNN_STATUS_NAME> (<code>): <last error>"
  [[nodiscard]] std::string to_string() const;
};

template <class T>
using Expected = std::expected<T, Status>;

// Turns a cuDNN status into Expected<void>, reading cudnnGetLastErrorString on failure.
[[nodiscard]] Expected<void> check(cudnnStatus_t code, std::string_view context);

}  // namespace dnngraph::backend
