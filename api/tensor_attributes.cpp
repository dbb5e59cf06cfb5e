// TensorAttributes helpers.
#include "api/tensor_attributes.hpp"

namespace dnngraph {

std::string TensorAttributes::describe() const {
  std::string out;
  if (!name_.empty()) {
    out = "'" + name_ + "'";
  } else {
    out = label_.empty() ? std::string("unnamed tensor") : label_;
  }
  out += uid_ ? " (uid " + std::to_string(*uid_) + ")" : std::string(" (no uid yet)");
  return out;
}

}  // namespace dnngraph
