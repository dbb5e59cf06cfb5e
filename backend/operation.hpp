// backend::Operation: what an operation graph is made of, any one of the operation descriptors
// (CUDNN_BACKEND_OPERATION_*_DESCRIPTOR). The operation classes derive from it; an
// OperationGraph takes nothing else.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Operation : public Descriptor {
 protected:
  explicit Operation(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
