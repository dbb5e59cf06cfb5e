// The C++20 module `dnngraph`: the api headers in the global module fragment, then the public
// names exported. No logic lives here.
module;

#include "api/dnngraph.hpp"

export module dnngraph;

export namespace dnngraph {
using dnngraph::AdaLayernormAttributes;
using dnngraph::add_cudnn_search_candidate;
using dnngraph::alibi_slopes;
using dnngraph::arity;
using dnngraph::AutotuneOptions;
using dnngraph::AutotuneReport;
using dnngraph::AutotuneRow;
using dnngraph::BatchnormAttributes;
using dnngraph::BatchnormInferenceAttributes;
using dnngraph::BehaviorNote;
using dnngraph::BnFinalizeAttributes;
using dnngraph::channels_last_strides;
using dnngraph::ConcatenateAttributes;
using dnngraph::ConvDgradAttributes;
using dnngraph::ConvFpropAttributes;
using dnngraph::ConvolutionMode;
using dnngraph::ConvWgradAttributes;
using dnngraph::cudnn_compiled_version;
using dnngraph::cudnn_library_path;
using dnngraph::cudnn_library_source;
using dnngraph::cudnn_minimum_version;
using dnngraph::cudnn_offers;
using dnngraph::cudnn_runtime_version;
using dnngraph::cudnn_version_needed;
using dnngraph::cudnn_version_string;
using dnngraph::CudnnCapability;
using dnngraph::DataType;
using dnngraph::DbnWeightAttributes;
using dnngraph::DiagonalAlignment;
using dnngraph::EngineChoice;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::GenstatsAttributes;
using dnngraph::Graph;
using dnngraph::Handle;
using dnngraph::HeuristicMode;
using dnngraph::InstancenormAttributes;
using dnngraph::KernelCache;
using dnngraph::KernelCacheKey;
using dnngraph::KernelCacheStore;
using dnngraph::KnobChoices;
using dnngraph::LayernormAttributes;
using dnngraph::log_level;
using dnngraph::LogLevel;
using dnngraph::LogSink;
using dnngraph::LoweringSummary;
using dnngraph::make_error;
using dnngraph::MatmulAttributes;
using dnngraph::NormBackwardAttributes;
using dnngraph::NormFwdPhase;
using dnngraph::NumericalNote;
using dnngraph::packed_strides;
using dnngraph::parse_engine_choice;
using dnngraph::PlanInfo;
using dnngraph::PlanPolicy;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::ReductionAttributes;
using dnngraph::ReductionMode;
using dnngraph::ResampleAttributes;
using dnngraph::ResampleBackwardAttributes;
using dnngraph::ResampleMode;
using dnngraph::ReshapeAttributes;
using dnngraph::Result;
using dnngraph::RmsnormAttributes;
using dnngraph::RngAttributes;
using dnngraph::SdpaAttributes;
using dnngraph::SdpaBackwardAttributes;
using dnngraph::SdpaFp8Attributes;
using dnngraph::SdpaFp8BackwardAttributes;
using dnngraph::set_cudnn_library;
using dnngraph::set_log_level;
using dnngraph::set_log_sink;
using dnngraph::size_of;
using dnngraph::SliceAttributes;
using dnngraph::StoredFile;
using dnngraph::StoredKernelCache;
using dnngraph::TensorAttributes;
using dnngraph::to_string;
}  // namespace dnngraph
