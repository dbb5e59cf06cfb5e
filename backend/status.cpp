// backend::Status implementation.
#include "backend/status.hpp"

#include "backend/library.hpp"

#include <array>
#include <string>

namespace dnngraph::backend {

std::string Status::to_string() const {
  std::string out = context;
  out += ": ";
  out += lib::cudnnGetErrorString(code);
  out += " (" + std::to_string(static_cast<int>(code)) + ")";
  if (!last_error.empty()) {
    out += ": ";
    out += last_error;
  }
  return out;
}

Expected<void> check(cudnnStatus_t code, std::string_view context) {
  if (code == CUDNN_STATUS_SUCCESS) {
    return {};
  }
  std::array<char, 1024> message{};
  lib::cudnnGetLastErrorString(message.data(), message.size());
  return std::unexpected(Status{code, std::string(context), std::string(message.data())});
}

}  // namespace dnngraph::backend
