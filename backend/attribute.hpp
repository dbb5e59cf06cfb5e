// backend::Attribute: one cuDNN backend attribute, its enum value and its name, spelled once.
#pragma once

#include <cudnn.h>

#include <string_view>

namespace dnngraph::backend {

// What a descriptor sets or gets: the enum cuDNN takes and the name errors report.
struct Attribute {
  cudnnBackendAttributeName_t id;
  std::string_view name;
};

}  // namespace dnngraph::backend

// DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_DIMENSIONS) is the Attribute of that enum value named
// "CUDNN_ATTR_TENSOR_DIMENSIONS": the attribute's name is written once, so a value and the name
// an error reports cannot disagree. A value, not control flow.
#define DNNGRAPH_ATTRIBUTE(attribute) (::dnngraph::backend::Attribute{(attribute), #attribute})
