// The API's strong enums as Python enum.Enum classes. The members come from the C++ to_string()
// tables (enumerators are numbered from 0 without gaps), so a value added in C++ appears here
// without a second list to keep in step.
#include <nanobind/nanobind.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"

#include <string>
#include <string_view>

namespace nb = nanobind;

namespace dnngraph::python {

namespace {

template <class E>
void bind_enum(nb::module_& m, const char* name, const char* doc) {
  nb::enum_<E> e(m, name, doc);
  for (int i = 0; i < 256; ++i) {
    const auto value = static_cast<E>(i);
    const std::string_view text = to_string(value);
    if (text == unknown_enumerator) {
      break;
    }
    e.value(std::string(text).c_str(), value);
  }
}

}  // namespace

void bind_enums(nb::module_& m) {
  bind_enum<ErrorCode>(m, "ErrorCode", "What went wrong: dnngraph.Error.code.");
  bind_enum<DataType>(m, "DataType", "Element type of a tensor or of a node's math.");
  bind_enum<HeuristicMode>(m, "HeuristicMode",
                           "cuDNN heuristics that rank engine configs at build().");
  bind_enum<PointwiseMode>(m, "PointwiseMode",
                           "What a pointwise node computes (1, 2 or 3 inputs: see arity()).");
  bind_enum<ConvolutionMode>(m, "ConvolutionMode",
                             "CrossCorrelation (the default) or Convolution (flipped filter).");
  bind_enum<ReductionMode>(m, "ReductionMode", "What a reduction computes over reduced dims.");
  bind_enum<ResampleMode>(m, "ResampleMode",
                          "What a resample (pooling) node computes over each window.");
  bind_enum<NormFwdPhase>(m, "NormFwdPhase",
                          "Training (also writes the statistics) or Inference (Y only).");
  bind_enum<NumericalNote>(m, "NumericalNote",
                           "What cuDNN says of an engine's numbers (PlanPolicy filters on it).");
  bind_enum<BehaviorNote>(m, "BehaviorNote",
                          "What cuDNN says of an engine's behaviour (PlanPolicy filters on it).");
  bind_enum<CudnnCapability>(m, "CudnnCapability",
                             "What a cuDNN version brought: ask cudnn_offers(), not a version.");
}

}  // namespace dnngraph::python
