// backend::Status: the outcome of one cuDNN call, with what was being done and cuDNN's own words.
#pragma once

#include <cudnn.h>

#include <exception>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

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

// Makes one cuDNN call and checks its status. cuDNN is C++ inside; should a C++ exception come
// out through its C API, it becomes a Status as well, so none crosses dnngraph's API.
template <class Call>
[[nodiscard]] Expected<void> call(std::string_view context, Call&& cudnn_call) {
  try {
    return check(std::forward<Call>(cudnn_call)(), context);
  } catch (const std::exception& e) {
    return std::unexpected(Status{CUDNN_STATUS_INTERNAL_ERROR, std::string(context),
                                  std::string("C++ exception out of cuDNN: ") + e.what()});
  } catch (...) {
    return std::unexpected(Status{CUDNN_STATUS_INTERNAL_ERROR, std::string(context),
                                  "unknown C++ exception out of cuDNN"});
  }
}

// call() with the context made only on failure: `describe` returns it (a std::string). For the
// calls every execute and every attribute set makes, which would otherwise build a string each.
template <class Describe, class Call>
[[nodiscard]] Expected<void> call_described(Describe&& describe, Call&& cudnn_call) {
  cudnnStatus_t code = CUDNN_STATUS_SUCCESS;
  try {
    code = std::forward<Call>(cudnn_call)();
  } catch (const std::exception& e) {
    return std::unexpected(Status{CUDNN_STATUS_INTERNAL_ERROR, describe(),
                                  std::string("C++ exception out of cuDNN: ") + e.what()});
  } catch (...) {
    return std::unexpected(
        Status{CUDNN_STATUS_INTERNAL_ERROR, describe(), "unknown C++ exception out of cuDNN"});
  }
  if (code == CUDNN_STATUS_SUCCESS) {
    return {};
  }
  return check(code, describe());
}

}  // namespace dnngraph::backend
