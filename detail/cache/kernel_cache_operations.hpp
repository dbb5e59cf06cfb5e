// The nodes of a kernel cache document as cuDNN 9.19 serializes them (internal to api/, data
// only): for each operation descriptor dnngraph lowers, the members cuDNN writes, what each holds
// and which are always there; the enum names cuDNN writes. kernel_cache_schema.cpp checks
// documents against these tables. Learned from documents cuDNN 9.19 serialized on the CPU for
// dynamic-shape graphs of every node kind dnngraph offers (tests/cpu/
// kernel_cache_every_node_test.cpp builds them) and from the member names in libcudnn_graph.so.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace dnngraph::detail::cache_schema {

using Names = std::span<const std::string_view>;

// cuDNN 9.19's operation graph finalize modes: its string table (INVALID_* left out), and those
// measured beyond it (SCALE_BIAS_ADD_RELU_CONV_STATS for conv_fprop + genstats, SDPA_FWD and
// SDPA_BWD for attention graphs).
inline constexpr std::array<std::string_view, 24> finalize_modes{
    "CONV_FORWARD",
    "CONV_BWD_DATA",
    "CONV_BWD_FILTER",
    "CONV_SCALE_ADD_BIAS_ACT",
    "CONV_ADD_BIAS_ACT",
    "SCALE_BIAS_ADD_RELU_WGRAD",
    "SCALE_BIAS_ADD_RELU_CONV_STATS",
    "BN_FINALIZE_STATISTICS",
    "DGRAD_ADD_DRELU_DUAL_BN_BWD",
    "GENERIC_CONV_FUSION",
    "GENERIC_MATMUL_FUSION",
    "GENERIC_POINTWISE_FUSION",
    "SDPA_FWD",
    "SDPA_BWD",
    "UNIFIED_SDPA_FWD",
    "UNIFIED_SDPA_BWD",
    "NORM_FWD_INFER",
    "NORM_FWD_TRAIN",
    "NORM_BWD",
    "SPARSE_PATTERN_GNN",
    "RESAMPLE_FWD",
    "RESAMPLE_BWD",
    "FMHA_FLASH_ATTENTION",
    "BLAS_MATMUL",
};

// The enumerators of cudnn_graph.h (9.19) that cuDNN writes by name.
inline constexpr std::array<std::string_view, 22> data_types{
    "CUDNN_DATA_FLOAT",       "CUDNN_DATA_DOUBLE",   "CUDNN_DATA_HALF",
    "CUDNN_DATA_INT8",        "CUDNN_DATA_INT32",    "CUDNN_DATA_INT8x4",
    "CUDNN_DATA_UINT8",       "CUDNN_DATA_UINT8x4",  "CUDNN_DATA_INT8x32",
    "CUDNN_DATA_BFLOAT16",    "CUDNN_DATA_INT64",    "CUDNN_DATA_BOOLEAN",
    "CUDNN_DATA_FP8_E4M3",    "CUDNN_DATA_FP8_E5M2", "CUDNN_DATA_FAST_FLOAT_FOR_FP8",
    "CUDNN_DATA_FP8_E8M0",    "CUDNN_DATA_FP4_E2M1", "CUDNN_DATA_INT4",
    "CUDNN_DATA_UINT4",       "CUDNN_DATA_UINT32",   "CUDNN_DATA_COMPLEX_FP32",
    "CUDNN_DATA_COMPLEX_FP64"};
inline constexpr std::array<std::string_view, 2> convolution_modes{"CUDNN_CONVOLUTION",
                                                                   "CUDNN_CROSS_CORRELATION"};
inline constexpr std::array<std::string_view, 51> pointwise_modes{
    "CUDNN_POINTWISE_ADD",          "CUDNN_POINTWISE_ADD_SQUARE",
    "CUDNN_POINTWISE_DIV",          "CUDNN_POINTWISE_MAX",
    "CUDNN_POINTWISE_MIN",          "CUDNN_POINTWISE_MOD",
    "CUDNN_POINTWISE_MUL",          "CUDNN_POINTWISE_POW",
    "CUDNN_POINTWISE_SUB",          "CUDNN_POINTWISE_ABS",
    "CUDNN_POINTWISE_CEIL",         "CUDNN_POINTWISE_COS",
    "CUDNN_POINTWISE_EXP",          "CUDNN_POINTWISE_FLOOR",
    "CUDNN_POINTWISE_LOG",          "CUDNN_POINTWISE_NEG",
    "CUDNN_POINTWISE_RSQRT",        "CUDNN_POINTWISE_SIN",
    "CUDNN_POINTWISE_SQRT",         "CUDNN_POINTWISE_TAN",
    "CUDNN_POINTWISE_ERF",          "CUDNN_POINTWISE_IDENTITY",
    "CUDNN_POINTWISE_RECIPROCAL",   "CUDNN_POINTWISE_ATAN2",
    "CUDNN_POINTWISE_RELU_FWD",     "CUDNN_POINTWISE_TANH_FWD",
    "CUDNN_POINTWISE_SIGMOID_FWD",  "CUDNN_POINTWISE_ELU_FWD",
    "CUDNN_POINTWISE_GELU_FWD",     "CUDNN_POINTWISE_SOFTPLUS_FWD",
    "CUDNN_POINTWISE_SWISH_FWD",    "CUDNN_POINTWISE_GELU_APPROX_TANH_FWD",
    "CUDNN_POINTWISE_RELU_BWD",     "CUDNN_POINTWISE_TANH_BWD",
    "CUDNN_POINTWISE_SIGMOID_BWD",  "CUDNN_POINTWISE_ELU_BWD",
    "CUDNN_POINTWISE_GELU_BWD",     "CUDNN_POINTWISE_SOFTPLUS_BWD",
    "CUDNN_POINTWISE_SWISH_BWD",    "CUDNN_POINTWISE_GELU_APPROX_TANH_BWD",
    "CUDNN_POINTWISE_CMP_EQ",       "CUDNN_POINTWISE_CMP_NEQ",
    "CUDNN_POINTWISE_CMP_GT",       "CUDNN_POINTWISE_CMP_GE",
    "CUDNN_POINTWISE_CMP_LT",       "CUDNN_POINTWISE_CMP_LE",
    "CUDNN_POINTWISE_LOGICAL_AND",  "CUDNN_POINTWISE_LOGICAL_OR",
    "CUDNN_POINTWISE_LOGICAL_NOT",  "CUDNN_POINTWISE_GEN_INDEX",
    "CUDNN_POINTWISE_BINARY_SELECT"};
inline constexpr std::array<std::string_view, 9> reduction_operators{
    "CUDNN_REDUCE_TENSOR_ADD",   "CUDNN_REDUCE_TENSOR_MUL",   "CUDNN_REDUCE_TENSOR_MIN",
    "CUDNN_REDUCE_TENSOR_MAX",   "CUDNN_REDUCE_TENSOR_AMAX",  "CUDNN_REDUCE_TENSOR_AVG",
    "CUDNN_REDUCE_TENSOR_NORM1", "CUDNN_REDUCE_TENSOR_NORM2", "CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS"};
inline constexpr std::array<std::string_view, 6> norm_modes{
    "CUDNN_LAYER_NORM", "CUDNN_INSTANCE_NORM", "CUDNN_BATCH_NORM",
    "CUDNN_GROUP_NORM", "CUDNN_RMS_NORM",      "CUDNN_ADA_LAYER_NORM"};
inline constexpr std::array<std::string_view, 2> norm_phases{"CUDNN_NORM_FWD_INFERENCE",
                                                             "CUDNN_NORM_FWD_TRAINING"};
inline constexpr std::array<std::string_view, 6> resample_modes{
    "CUDNN_RESAMPLE_NEAREST", "CUDNN_RESAMPLE_BILINEAR",
    "CUDNN_RESAMPLE_AVGPOOL", "CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING",
    "CUDNN_RESAMPLE_MAXPOOL", "CUDNN_RESAMPLE_AVGPOOL_EXCLUDE_PADDING"};
inline constexpr std::array<std::string_view, 3> padding_modes{
    "CUDNN_ZERO_PAD", "CUDNN_NEG_INF_PAD", "CUDNN_EDGE_VAL_PAD"};
inline constexpr std::array<std::string_view, 2> nan_propagations{"CUDNN_NOT_PROPAGATE_NAN",
                                                                  "CUDNN_PROPAGATE_NAN"};
inline constexpr std::array<std::string_view, 2> bn_finalize_modes{
    "CUDNN_BN_FINALIZE_STATISTICS_TRAINING", "CUDNN_BN_FINALIZE_STATISTICS_INFERENCE"};
// dnngraph lowers Bernoulli only; the other distributions' parameters are not in this schema.
inline constexpr std::array<std::string_view, 1> rng_distributions{
    "CUDNN_RNG_DISTRIBUTION_BERNOULLI"};

// What a node member holds.
enum class Kind : std::uint8_t {
  Tensor,         // the name of a tensor of the graph, of the rank the node's tensors share
  AnyRankTensor,  // the name of a tensor of the graph, of any rank (reshape's Y, rng's keys)
  TensorList,     // an array of names of tensors of the node's rank
  Number,         // a finite number
  Axis,           // an integer in 0..rank - 1 (pointwise GEN_INDEX's axis, concatenate's axis)
  ListIndex,      // -1 (none) or an index into the node's tensor list (concatenate in place)
  Count,          // an integer >= 1 (a convolution's groups)
  Boolean,
  DataType,
  ConvolutionMode,
  PointwiseMode,
  ReductionOperator,
  NormMode,
  NormPhase,
  ResampleMode,
  PaddingMode,
  NanPropagation,
  BnFinalizeMode,
  RngDistribution,
  Spatial,       // one integer per spatial dim (pad >= 0, stride/dilation >= 1)
  SpatialRank,   // the number of spatial dims: rank - 2
  SpatialRatio,  // one [numerator, denominator] per spatial dim (denominator >= 1; the
                 // numerator >= 0 for paddings, >= 1 for windows and strides)
  PerDim,        // one integer per dim of the node's rank (slice: starts and limits >= 0,
                 // strides >= 1)
};

struct Member {
  std::string_view name;
  Kind kind;
  bool required;
};

// A node kind dnngraph lowers, as cuDNN 9.19 serializes it: the members of its family
// (convolutions share theirs, and so do the resamples) and the tensors it names.
struct Operation {
  std::string_view name;
  std::span<const Member> members;
  std::span<const Member> tensors;
  // Convolutions and resamples: the tensor whose rank - 2 is the spatial rank.
  std::string_view spatial_tensor;
};

inline constexpr std::array<Member, 10> convolution_members{{
    {"mode", Kind::ConvolutionMode, true},
    {"mathPrec", Kind::DataType, true},
    {"alpha", Kind::Number, true},
    {"beta", Kind::Number, true},
    {"pad", Kind::Spatial, false},
    {"pad_lower", Kind::Spatial, false},
    {"pad_upper", Kind::Spatial, false},
    {"stride", Kind::Spatial, true},
    {"dilation", Kind::Spatial, true},
    {"groupCount", Kind::Count, false},  // written for grouped convolutions only
}};
inline constexpr std::array<Member, 3> conv_fprop_tensors{
    {{"X", Kind::Tensor, true}, {"W", Kind::Tensor, true}, {"Y", Kind::Tensor, true}}};
inline constexpr std::array<Member, 3> conv_dgrad_tensors{
    {{"dX", Kind::Tensor, true}, {"W", Kind::Tensor, true}, {"dY", Kind::Tensor, true}}};
inline constexpr std::array<Member, 3> conv_wgrad_tensors{
    {{"X", Kind::Tensor, true}, {"dW", Kind::Tensor, true}, {"dY", Kind::Tensor, true}}};
inline constexpr std::array<Member, 9> matmul_members{{
    {"mathPrec", Kind::DataType, true},
    {"matA", Kind::Tensor, true},
    {"matB", Kind::Tensor, true},
    {"matC", Kind::Tensor, true},
    {"mOverride", Kind::Tensor, false},
    {"nOverride", Kind::Tensor, false},
    {"kOverride", Kind::Tensor, false},
    {"paddingValue", Kind::Number, false},
    {"paddingDataType", Kind::DataType, false},
}};
inline constexpr std::array<Member, 16> pointwise_members{{
    {"pointwiseMode", Kind::PointwiseMode, true},
    {"mathPrec", Kind::DataType, true},
    {"upperClip", Kind::Number, false},
    {"lowerClip", Kind::Number, false},
    {"lowerClipSlope", Kind::Number, false},
    {"alpha", Kind::Number, false},
    {"beta", Kind::Number, false},
    {"axis", Kind::Axis, false},
    {"alpha1", Kind::Number, false},
    {"alpha2", Kind::Number, false},
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, false},
    {"B", Kind::Tensor, false},
    {"T", Kind::Tensor, false},
    {"dX", Kind::Tensor, false},
    {"dY", Kind::Tensor, false},
}};
inline constexpr std::array<Member, 5> reduction_members{{
    {"reductionOp", Kind::ReductionOperator, true},
    {"mathPrec", Kind::DataType, true},
    {"isDeterministic", Kind::Boolean, false},
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, true},
}};
// A reshape may change the rank (merged or split dims).
inline constexpr std::array<Member, 2> reshape_members{{
    {"X", Kind::Tensor, true},
    {"Y", Kind::AnyRankTensor, true},
}};
inline constexpr std::array<Member, 4> concat_members{{
    {"axis", Kind::Axis, true},
    {"inplaceIndex", Kind::ListIndex, true},
    {"inputDescs", Kind::TensorList, true},
    {"outputDesc", Kind::Tensor, true},
}};
// The seed and offset hold one value each, in a tensor of any rank.
inline constexpr std::array<Member, 5> rng_members{{
    {"Y", Kind::Tensor, true},
    {"distribution", Kind::RngDistribution, true},
    {"bernoulli_dist_probability", Kind::Number, true},
    {"seedTensor", Kind::AnyRankTensor, true},
    {"offset", Kind::AnyRankTensor, true},
}};
// The slice operation (cuDNN >= 9.22), as cuDNN 9.28.1 wrote it on the H200: X and Y of one
// rank, a start, a limit and a stride per dim.
inline constexpr std::array<Member, 5> slice_members{{
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, true},
    {"startIndices", Kind::PerDim, true},
    {"limitIndices", Kind::PerDim, true},
    {"strides", Kind::PerDim, true},
}};
// The attention graph's K/V read through a page table (cuDNN checks their ranks, all 4).
inline constexpr std::array<Member, 4> paged_cache_load_members{{
    {"container", Kind::Tensor, true},
    {"sequence", Kind::Tensor, true},
    {"pageTable", Kind::Tensor, true},
    {"Y", Kind::Tensor, true},
}};
inline constexpr std::array<Member, 15> norm_forward_members{{
    {"mode", Kind::NormMode, true},
    {"fmode", Kind::NormPhase, true},
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, true},
    {"Mean", Kind::Tensor, false},
    {"InvVariance", Kind::Tensor, false},
    {"Scale", Kind::Tensor, false},
    {"Bias", Kind::Tensor, false},
    {"epsilonDesc", Kind::Tensor, false},
    {"InRunningMean", Kind::Tensor, false},
    {"InRunningVar", Kind::Tensor, false},
    {"OutRunningMean", Kind::Tensor, false},
    {"OutRunningVar", Kind::Tensor, false},
    {"expavgfactorDesc", Kind::Tensor, false},
    {"peerStats", Kind::TensorList, false},
}};
// Layer, RMS, batch, instance and adaptive layer norm backward: RMS norm has no Mean or DBias.
inline constexpr std::array<Member, 9> norm_backward_members{{
    {"mode", Kind::NormMode, true},
    {"X", Kind::Tensor, true},
    {"DY", Kind::Tensor, true},
    {"DX", Kind::Tensor, true},
    {"Scale", Kind::Tensor, false},
    {"Mean", Kind::Tensor, false},
    {"InvVariance", Kind::Tensor, false},
    {"DScale", Kind::Tensor, false},
    {"DBias", Kind::Tensor, false},
}};
inline constexpr std::array<Member, 4> gen_stats_members{{
    {"mathPrec", Kind::DataType, true},
    {"X", Kind::Tensor, true},
    {"Sum", Kind::Tensor, true},
    {"SqSum", Kind::Tensor, true},
}};
inline constexpr std::array<Member, 17> bn_finalize_members{{
    {"mode", Kind::BnFinalizeMode, true},
    {"mathPrec", Kind::DataType, true},
    {"ySum", Kind::Tensor, true},
    {"ySqSum", Kind::Tensor, true},
    {"bnScale", Kind::Tensor, true},
    {"bnBias", Kind::Tensor, true},
    {"bnEqScale", Kind::Tensor, true},
    {"bnEqBias", Kind::Tensor, true},
    {"bnPrevRunningMean", Kind::Tensor, false},
    {"bnPrevRunningVar", Kind::Tensor, false},
    {"bnUpdatedRunningMean", Kind::Tensor, false},
    {"bnUpdatedRunningVar", Kind::Tensor, false},
    {"bnSavedMean", Kind::Tensor, false},
    {"bnSavedInvStd", Kind::Tensor, false},
    {"accumCntValTensor", Kind::Tensor, false},
    {"epsilonValTensor", Kind::Tensor, false},
    {"expAverageFactorValTensor", Kind::Tensor, false},
}};
// dbn_weight: the batch norm backward weights operation.
inline constexpr std::array<Member, 11> bn_bwd_weights_members{{
    {"mathPrec", Kind::DataType, true},
    {"xDesc", Kind::Tensor, true},
    {"dyDesc", Kind::Tensor, true},
    {"BNmeanDesc", Kind::Tensor, true},
    {"BNscaleDesc", Kind::Tensor, true},
    {"BNinvstdDesc", Kind::Tensor, true},
    {"dGammaDesc", Kind::Tensor, true},
    {"dBetaDesc", Kind::Tensor, true},
    {"eqDyScaleDesc", Kind::Tensor, true},
    {"eqXScaleDesc", Kind::Tensor, true},
    {"eqBiasDesc", Kind::Tensor, true},
}};
inline constexpr std::array<Member, 11> resample_members{{
    {"alpha", Kind::Number, true},
    {"beta", Kind::Number, true},
    {"mode", Kind::ResampleMode, true},
    {"nbSpatialDims", Kind::SpatialRank, true},
    {"windowDim", Kind::SpatialRatio, true},
    {"prePad", Kind::SpatialRatio, true},
    {"postPad", Kind::SpatialRatio, true},
    {"stride", Kind::SpatialRatio, true},
    {"compType", Kind::DataType, true},
    {"nanOpt", Kind::NanPropagation, true},
    {"paddingMode", Kind::PaddingMode, true},
}};
inline constexpr std::array<Member, 3> resample_forward_tensors{
    {{"X", Kind::Tensor, true}, {"Y", Kind::Tensor, true}, {"Idx", Kind::Tensor, false}}};
// The backward reads the forward's index (max pooling) or its X and Y.
inline constexpr std::array<Member, 5> resample_backward_tensors{{
    {"dX", Kind::Tensor, true},
    {"dY", Kind::Tensor, true},
    {"Idx", Kind::Tensor, false},
    {"X", Kind::Tensor, false},
    {"Y", Kind::Tensor, false},
}};

inline constexpr std::array<Operation, 18> operations{{
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR", convolution_members,
     conv_fprop_tensors, "X"},
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR", convolution_members,
     conv_dgrad_tensors, "dX"},
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR", convolution_members,
     conv_wgrad_tensors, "X"},
    {"CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR", matmul_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR", pointwise_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR", reduction_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR", reshape_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR", concat_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR", slice_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR", rng_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR", paged_cache_load_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR", norm_forward_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR", norm_backward_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR", gen_stats_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR", bn_finalize_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR", bn_bwd_weights_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR", resample_members, resample_forward_tensors,
     "X"},
    {"CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR", resample_members, resample_backward_tensors,
     "dY"},
}};

}  // namespace dnngraph::detail::cache_schema
