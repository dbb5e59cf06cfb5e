// The kernel cache document schema, learned from cuDNN 9.19: documents it serializes on the CPU
// (operation graphs of every node kind dnngraph lowers) and the member names and type checks in
// libcudnn_graph.so. cuDNN type-checks most scalar members itself but indexes tables with
// key.type, iterates tensors/nodes without checking they are arrays, copies conv pad/stride/
// dilation into fixed arrays without a length check and divides by reduction dims: each of
// those crashed the process (issue 16). This file refuses every such shape first.
//
// Entry values (cuDNN's compiled kernels: base64 cubins and parameter patches) are checked for
// their shape only; they are code for the GPU and cannot be verified here (docs/kernel-cache.md).
#include "api/kernel_cache_schema.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

namespace {

namespace json = boost::json;

using Names = std::span<const std::string_view>;

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
// cuDNN's tensors hold at most CUDNN_DIM_MAX (8) dims in fixed arrays.
constexpr std::size_t max_rank = 8;

constexpr std::array<std::string_view, 4> root_members{"cudnnVersion", "schemaVersion",
                                                       "operationGraph", "kernel_cache"};
constexpr std::array<std::string_view, 4> graph_members{"finalizeMode", "tensors", "nodes",
                                                        "isDynamicShapeEnabled"};
constexpr std::array<std::string_view, 10> tensor_members{
    "name",      "dataType",  "dim",     "stride",       "isVirtual",
    "isByValue", "vectCount", "vectDim", "ptrAlignment", "reordering"};
constexpr std::array<std::string_view, 2> entry_members{"key", "value"};
constexpr std::array<std::string_view, 9> key_members{
    "type",  "engineId", "knobChoices",     "operationGraph",      "bpa_a",
    "bpa_b", "bpa_c",    "shader_hash_key", "check_specialization"};

// cuDNN 9.19's operation graph finalize modes (its string table, INVALID_* left out).
constexpr std::array<std::string_view, 20> finalize_modes{
    "CONV_FORWARD",
    "CONV_BWD_DATA",
    "CONV_BWD_FILTER",
    "CONV_SCALE_ADD_BIAS_ACT",
    "CONV_ADD_BIAS_ACT",
    "SCALE_BIAS_ADD_RELU_WGRAD",
    "BN_FINALIZE_STATISTICS",
    "DGRAD_ADD_DRELU_DUAL_BN_BWD",
    "GENERIC_CONV_FUSION",
    "GENERIC_MATMUL_FUSION",
    "GENERIC_POINTWISE_FUSION",
    "UNIFIED_SDPA_FWD",
    "UNIFIED_SDPA_BWD",
    "NORM_FWD_INFER",
    "NORM_FWD_TRAIN",
    "NORM_BWD",
    "SPARSE_PATTERN_GNN",
    "RESAMPLE_FWD",
    "RESAMPLE_BWD",
    "BLAS_MATMUL",
};
// The enumerators of cudnn_graph.h (9.19) that cuDNN writes by name.
constexpr std::array<std::string_view, 22> data_types{
    "CUDNN_DATA_FLOAT",       "CUDNN_DATA_DOUBLE",   "CUDNN_DATA_HALF",
    "CUDNN_DATA_INT8",        "CUDNN_DATA_INT32",    "CUDNN_DATA_INT8x4",
    "CUDNN_DATA_UINT8",       "CUDNN_DATA_UINT8x4",  "CUDNN_DATA_INT8x32",
    "CUDNN_DATA_BFLOAT16",    "CUDNN_DATA_INT64",    "CUDNN_DATA_BOOLEAN",
    "CUDNN_DATA_FP8_E4M3",    "CUDNN_DATA_FP8_E5M2", "CUDNN_DATA_FAST_FLOAT_FOR_FP8",
    "CUDNN_DATA_FP8_E8M0",    "CUDNN_DATA_FP4_E2M1", "CUDNN_DATA_INT4",
    "CUDNN_DATA_UINT4",       "CUDNN_DATA_UINT32",   "CUDNN_DATA_COMPLEX_FP32",
    "CUDNN_DATA_COMPLEX_FP64"};
constexpr std::array<std::string_view, 4> reorderings{
    "CUDNN_TENSOR_REORDERING_NONE", "CUDNN_TENSOR_REORDERING_INT8x32",
    "CUDNN_TENSOR_REORDERING_F16x16", "CUDNN_TENSOR_REORDERING_F8_128x4"};
constexpr std::array<std::string_view, 2> convolution_modes{"CUDNN_CONVOLUTION",
                                                            "CUDNN_CROSS_CORRELATION"};
constexpr std::array<std::string_view, 51> pointwise_modes{
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
constexpr std::array<std::string_view, 9> reduction_operators{
    "CUDNN_REDUCE_TENSOR_ADD",   "CUDNN_REDUCE_TENSOR_MUL",   "CUDNN_REDUCE_TENSOR_MIN",
    "CUDNN_REDUCE_TENSOR_MAX",   "CUDNN_REDUCE_TENSOR_AMAX",  "CUDNN_REDUCE_TENSOR_AVG",
    "CUDNN_REDUCE_TENSOR_NORM1", "CUDNN_REDUCE_TENSOR_NORM2", "CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS"};
constexpr std::array<std::string_view, 6> norm_modes{"CUDNN_LAYER_NORM", "CUDNN_INSTANCE_NORM",
                                                     "CUDNN_BATCH_NORM", "CUDNN_GROUP_NORM",
                                                     "CUDNN_RMS_NORM",   "CUDNN_ADA_LAYER_NORM"};
constexpr std::array<std::string_view, 2> norm_phases{"CUDNN_NORM_FWD_INFERENCE",
                                                      "CUDNN_NORM_FWD_TRAINING"};

// What a node member holds.
enum class Kind : std::uint8_t {
  Tensor,      // the name of a tensor of the same operation graph
  TensorList,  // an array of such names
  Number,      // a finite number
  Integer,     // an integer in 0..rank - 1 of the node's tensors (pointwise axis)
  Boolean,
  DataType,
  ConvolutionMode,
  PointwiseMode,
  ReductionOperator,
  NormMode,
  NormPhase,
  Spatial,  // one integer per spatial dim of the convolution (pad >= 0, stride/dilation >= 1)
};

struct Member {
  std::string_view name;
  Kind kind;
  bool required;
};

// A node kind dnngraph lowers, as cuDNN 9.19 serializes it: the members of its family
// (convolutions share theirs) and the tensors it names.
struct Operation {
  std::string_view name;
  std::span<const Member> members;
  std::span<const Member> tensors;
  std::string_view spatial_tensor;  // convolutions: the tensor whose rank - 2 is the spatial rank
};

constexpr std::array<Member, 9> convolution_members{{
    {"mode", Kind::ConvolutionMode, true},
    {"mathPrec", Kind::DataType, true},
    {"alpha", Kind::Number, true},
    {"beta", Kind::Number, true},
    {"pad", Kind::Spatial, false},
    {"pad_lower", Kind::Spatial, false},
    {"pad_upper", Kind::Spatial, false},
    {"stride", Kind::Spatial, true},
    {"dilation", Kind::Spatial, true},
}};
constexpr std::array<Member, 3> conv_fprop_tensors{
    {{"X", Kind::Tensor, true}, {"W", Kind::Tensor, true}, {"Y", Kind::Tensor, true}}};
constexpr std::array<Member, 3> conv_dgrad_tensors{
    {{"dX", Kind::Tensor, true}, {"W", Kind::Tensor, true}, {"dY", Kind::Tensor, true}}};
constexpr std::array<Member, 3> conv_wgrad_tensors{
    {{"X", Kind::Tensor, true}, {"dW", Kind::Tensor, true}, {"dY", Kind::Tensor, true}}};
constexpr std::array<Member, 9> matmul_members{{
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
constexpr std::array<Member, 16> pointwise_members{{
    {"pointwiseMode", Kind::PointwiseMode, true},
    {"mathPrec", Kind::DataType, true},
    {"upperClip", Kind::Number, false},
    {"lowerClip", Kind::Number, false},
    {"lowerClipSlope", Kind::Number, false},
    {"alpha", Kind::Number, false},
    {"beta", Kind::Number, false},
    {"axis", Kind::Integer, false},
    {"alpha1", Kind::Number, false},
    {"alpha2", Kind::Number, false},
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, false},
    {"B", Kind::Tensor, false},
    {"T", Kind::Tensor, false},
    {"dX", Kind::Tensor, false},
    {"dY", Kind::Tensor, false},
}};
constexpr std::array<Member, 5> reduction_members{{
    {"reductionOp", Kind::ReductionOperator, true},
    {"mathPrec", Kind::DataType, true},
    {"isDeterministic", Kind::Boolean, false},
    {"X", Kind::Tensor, true},
    {"Y", Kind::Tensor, true},
}};
constexpr std::array<Member, 15> norm_forward_members{{
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

constexpr std::array<Operation, 7> operations{{
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR", convolution_members,
     conv_fprop_tensors, "X"},
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR", convolution_members,
     conv_dgrad_tensors, "dX"},
    {"CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR", convolution_members,
     conv_wgrad_tensors, "X"},
    {"CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR", matmul_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR", pointwise_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR", reduction_members, {}, ""},
    {"CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR", norm_forward_members, {}, ""},
}};

// A value as the message shows it: its JSON, shortened.
std::string shown(const json::value& value) {
  constexpr std::size_t longest = 60;
  std::string text = json::serialize(value);
  if (text.size() > longest) {
    text.resize(longest - 3);
    text += "...";
  }
  return text;
}

std::unexpected<Error> refuse(const std::string& path, std::string_view expected,
                              std::string_view given) {
  return make_error(ErrorCode::InvalidJson, "kernel cache JSON: " + path + ": expected " +
                                                std::string(expected) + ", given " +
                                                std::string(given));
}

std::string member_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

std::string element_path(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string listed(Names names) {
  std::string text;
  for (const auto name : names) {
    text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

Result<const json::object*> object_at(const json::value& value, const std::string& path) {
  const json::object* object = value.if_object();
  if (object == nullptr) {
    return refuse(path.empty() ? "the document" : path, "an object", shown(value));
  }
  return object;
}

Result<const json::array*> array_at(const json::value& value, const std::string& path) {
  const json::array* array = value.if_array();
  if (array == nullptr) {
    return refuse(path, "an array", shown(value));
  }
  return array;
}

// The member names below are those cuDNN 9.19 writes. A document of another cuDNN may carry
// members 9.19 lacks: those pass unchecked (set per document by check_cache_schema), while every
// member named here is still checked. Not yet measured against another version's documents.
thread_local bool unknown_members_allowed = false;

// Refuses the first member whose name is not one of `known` (in a cuDNN 9.19 document).
Result<void> only_known_members(const json::object& object, const std::string& path, Names known) {
  if (unknown_members_allowed) {
    return {};
  }
  for (const auto& member : object) {
    if (std::ranges::find(known, std::string_view(member.key())) == known.end()) {
      return refuse(member_path(path, member.key()), "only the members " + listed(known),
                    "an unknown member");
    }
  }
  return {};
}

Result<const json::value*> required_member(const json::object& object, const std::string& path,
                                           std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr) {
    return refuse(member_path(path, name), "a member", "none (it is missing)");
  }
  return value;
}

// An object's members by name, after checking it is an object, has no member beyond `known`
// and has the first `required` of them. Members it lacks are absent from the map.
using Members = std::map<std::string_view, const json::value*>;
Result<Members> members_of(const json::value& value, const std::string& path, Names known,
                           std::size_t required) {
  auto object = object_at(value, path);
  if (!object) {
    return std::unexpected(object.error());
  }
  if (auto ok = only_known_members(**object, path, known); !ok) {
    return std::unexpected(ok.error());
  }
  Members members;
  for (std::size_t i = 0; i < known.size(); ++i) {
    const json::value* member = (**object).if_contains(known[i]);
    if (member == nullptr && i < required) {
      return refuse(member_path(path, known[i]), "a member", "none (it is missing)");
    }
    if (member != nullptr) {
      members.emplace(known[i], member);
    }
  }
  return members;
}

// A check's value dropped: only whether it passed.
template <class T>
Result<void> passed(const Result<T>& checked) {
  if (!checked) {
    return std::unexpected(checked.error());
  }
  return {};
}

Result<std::int64_t> integer_at(const json::value& value, const std::string& path,
                                std::int64_t lowest, std::int64_t highest) {
  const std::string expected =
      "an integer in " + std::to_string(lowest) + ".." + std::to_string(highest);
  std::int64_t number = 0;
  if (const auto* i = value.if_int64()) {
    number = *i;
  } else if (const auto* u = value.if_uint64(); u != nullptr && *u <= std::uint64_t(int64_max)) {
    number = static_cast<std::int64_t>(*u);
  } else {
    return refuse(path, expected, shown(value));
  }
  if (number < lowest || number > highest) {
    return refuse(path, expected, shown(value));
  }
  return number;
}

Result<void> number_at(const json::value& value, const std::string& path) {
  // read_strictly refused non-finite doubles already; integers are finite.
  if (!value.is_number()) {
    return refuse(path, "a number", shown(value));
  }
  return {};
}

Result<void> boolean_at(const json::value& value, const std::string& path) {
  if (!value.is_bool()) {
    return refuse(path, "true or false", shown(value));
  }
  return {};
}

Result<void> one_of(const json::value& value, const std::string& path, Names names,
                    std::string_view what) {
  const json::string* text = value.if_string();
  if (text == nullptr || std::ranges::find(names, std::string_view(*text)) == names.end()) {
    return refuse(path, what, shown(value));
  }
  return {};
}

Result<std::vector<std::int64_t>> integers_at(const json::value& value, const std::string& path,
                                              std::size_t shortest, std::size_t longest,
                                              std::int64_t lowest, std::int64_t highest) {
  auto array = array_at(value, path);
  if (!array) {
    return std::unexpected(array.error());
  }
  if ((*array)->size() < shortest || (*array)->size() > longest) {
    return refuse(path,
                  "an array of " + std::to_string(shortest) +
                      (shortest == longest ? "" : ".." + std::to_string(longest)) + " integers",
                  std::to_string((*array)->size()) + " elements");
  }
  std::vector<std::int64_t> numbers;
  numbers.reserve((*array)->size());
  for (std::size_t i = 0; i < (*array)->size(); ++i) {
    auto number = integer_at((**array)[i], element_path(path, i), lowest, highest);
    if (!number) {
      return std::unexpected(number.error());
    }
    numbers.push_back(*number);
  }
  return numbers;
}

// A tensor's name is its uid in decimal: cuDNN converts it with std::stoll, which throws (and
// so aborts the process from a C API) on anything else, and on a value beyond int64. At most
// 18 digits always fit.
bool is_uid(std::string_view name) {
  constexpr std::size_t most_digits = 18;
  const std::string_view digits = name.starts_with('-') ? name.substr(1) : name;
  return !digits.empty() && digits.size() <= most_digits &&
         std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; });
}

// Tensor name -> rank, of one operation graph.
using TensorRanks = std::map<std::string, std::size_t, std::less<>>;

Result<void> check_tensor(const json::value& value, const std::string& path, TensorRanks& tensors) {
  auto found = members_of(value, path, tensor_members, tensor_members.size());
  if (!found) {
    return std::unexpected(found.error());
  }
  Members& members = *found;
  const json::string* name = members["name"]->if_string();
  if (name == nullptr || !is_uid(*name)) {
    return refuse(member_path(path, "name"), "a tensor uid in decimal (a string like \"7\")",
                  shown(*members["name"]));
  }
  auto dims = integers_at(*members["dim"], member_path(path, "dim"), 1, max_rank, 1, int64_max);
  if (!dims) {
    return std::unexpected(dims.error());
  }
  auto strides = integers_at(*members["stride"], member_path(path, "stride"), dims->size(),
                             dims->size(), 1, int64_max);
  if (!strides) {
    return std::unexpected(strides.error());
  }
  // Element count and extent stay in int64, as cuDNN computes them.
  std::int64_t elements = 1;
  std::int64_t extent = 1;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(elements, (*dims)[i], &elements) ||
        __builtin_mul_overflow((*dims)[i] - 1, (*strides)[i], &step) ||
        __builtin_add_overflow(extent, step, &extent)) {
      return refuse(path, "dims and strides whose element count and extent fit in int64",
                    "dim " + shown(*members["dim"]) + " and stride " + shown(*members["stride"]));
    }
  }
  const auto rank = static_cast<std::int64_t>(dims->size());
  const std::pair<std::string_view,
                  std::function<Result<void>(const json::value&, const std::string&)>>
      checks[] = {
          {"dataType",
           [](const json::value& v, const std::string& p) {
             return one_of(v, p, data_types, "a cudnnDataType_t name (CUDNN_DATA_...)");
           }},
          {"isVirtual", boolean_at},
          {"isByValue", boolean_at},
          {"vectCount",
           [](const json::value& v, const std::string& p) -> Result<void> {
             auto count = integer_at(v, p, 1, 32);
             if (count && *count != 1 && *count != 4 && *count != 32) {
               return refuse(p, "1, 4 or 32", shown(v));
             }
             return passed(count);
           }},
          {"vectDim",
           [rank](const json::value& v, const std::string& p) {
             return passed(integer_at(v, p, -1, rank - 1));
           }},
          {"ptrAlignment",
           [](const json::value& v, const std::string& p) {
             return passed(integer_at(v, p, 1, int32_max));
           }},
          {"reordering",
           [](const json::value& v, const std::string& p) {
             return one_of(v, p, reorderings, "a tensor reordering (CUDNN_TENSOR_REORDERING_...)");
           }},
      };
  for (const auto& [member, check] : checks) {
    if (auto ok = check(*members[member], member_path(path, member)); !ok) {
      return ok;
    }
  }
  if (!tensors.emplace(std::string(*name), dims->size()).second) {
    return refuse(member_path(path, "name"), "a uid no other tensor of the graph has",
                  shown(*members["name"]) + " again");
  }
  return {};
}

// The rank of the tensor a member names, after checking it names one.
Result<std::size_t> tensor_rank(const json::value& value, const std::string& path,
                                const TensorRanks& tensors) {
  const json::string* name = value.if_string();
  const auto found = name != nullptr ? tensors.find(std::string_view(*name)) : tensors.end();
  if (found == tensors.end()) {
    return refuse(path, "the name of a tensor in this operationGraph's tensors", shown(value));
  }
  return found->second;
}

Result<void> check_member(const Member& member, const json::value& value, const std::string& path,
                          const TensorRanks& tensors, std::size_t rank, std::int64_t spatial_rank) {
  switch (member.kind) {
    case Kind::Tensor: {
      auto found = tensor_rank(value, path, tensors);
      if (!found) {
        return std::unexpected(found.error());
      }
      // cuDNN reads the dims of a node's tensors side by side, past the end of a shorter one.
      if (*found != rank) {
        return refuse(path, "a tensor of rank " + std::to_string(rank) + " like the node's others",
                      "one of rank " + std::to_string(*found));
      }
      return {};
    }
    case Kind::TensorList: {
      auto list = array_at(value, path);
      if (!list) {
        return std::unexpected(list.error());
      }
      for (std::size_t i = 0; i < (*list)->size(); ++i) {
        if (auto found = tensor_rank((**list)[i], element_path(path, i), tensors); !found) {
          return std::unexpected(found.error());
        }
      }
      return {};
    }
    case Kind::Number: return number_at(value, path);
    case Kind::Integer:
      return passed(integer_at(value, path, 0, static_cast<std::int64_t>(rank) - 1));
    case Kind::Boolean: return boolean_at(value, path);
    case Kind::DataType:
      return one_of(value, path, data_types, "a cudnnDataType_t name (CUDNN_DATA_...)");
    case Kind::ConvolutionMode:
      return one_of(value, path, convolution_modes, "CUDNN_CONVOLUTION or CUDNN_CROSS_CORRELATION");
    case Kind::PointwiseMode:
      return one_of(value, path, pointwise_modes, "a cudnnPointwiseMode_t name");
    case Kind::ReductionOperator:
      return one_of(value, path, reduction_operators, "a cudnnReduceTensorOp_t name");
    case Kind::NormMode: return one_of(value, path, norm_modes, "a cudnnBackendNormMode_t name");
    case Kind::NormPhase:
      return one_of(value, path, norm_phases,
                    "CUDNN_NORM_FWD_INFERENCE or CUDNN_NORM_FWD_TRAINING");
    case Kind::Spatial: {
      const std::int64_t lowest = member.name.starts_with("pad") ? 0 : 1;
      const auto length = static_cast<std::size_t>(spatial_rank);
      return passed(integers_at(value, path, length, length, lowest, int32_max));
    }
  }
  return refuse(path, "a known member kind", shown(value));
}

Result<void> check_node(const json::value& value, const std::string& path,
                        const TensorRanks& tensors) {
  auto object = object_at(value, path);
  if (!object) {
    return std::unexpected(object.error());
  }
  auto kind = required_member(**object, path, "operation");
  if (!kind) {
    return std::unexpected(kind.error());
  }
  const json::string* kind_name = (*kind)->if_string();
  const auto* operation =
      kind_name == nullptr
          ? operations.end()
          : std::ranges::find(operations, std::string_view(*kind_name), &Operation::name);
  if (operation == operations.end()) {
    return refuse(member_path(path, "operation"),
                  "an operation dnngraph lowers (convolution forward/backward data/backward "
                  "filter, matmul, pointwise, reduction, norm forward)",
                  shown(**kind));
  }
  std::vector<Member> members(operation->tensors.begin(), operation->tensors.end());
  members.insert(members.end(), operation->members.begin(), operation->members.end());
  std::vector<std::string_view> known{"operation"};
  for (const Member& member : members) {
    known.push_back(member.name);
  }
  if (auto ok = only_known_members(**object, path, known); !ok) {
    return ok;
  }
  // The first tensor member sets the rank all of the node's tensors must have.
  std::size_t rank = 0;
  for (const Member& member : members) {
    const json::value* tensor = (**object).if_contains(member.name);
    if (member.kind == Kind::Tensor && tensor != nullptr) {
      auto found = tensor_rank(*tensor, member_path(path, member.name), tensors);
      if (!found) {
        return std::unexpected(found.error());
      }
      rank = *found;
      break;
    }
  }
  std::int64_t spatial_rank = 0;
  if (!operation->spatial_tensor.empty()) {
    spatial_rank = static_cast<std::int64_t>(rank) - 2;
    if (spatial_rank < 1) {
      return refuse(member_path(path, operation->spatial_tensor),
                    "a tensor of rank 3 or more (batch, channels, spatial dims)",
                    "one of rank " + std::to_string(rank));
    }
  }
  for (const Member& member : members) {
    const std::string at = member_path(path, member.name);
    const json::value* member_value = (**object).if_contains(member.name);
    if (member_value == nullptr) {
      if (member.required) {
        return refuse(at, "a member", "none (it is missing)");
      }
      continue;
    }
    if (auto ok = check_member(member, *member_value, at, tensors, rank, spatial_rank); !ok) {
      return ok;
    }
  }
  if (!operation->spatial_tensor.empty() && !(**object).contains("pad") &&
      !((**object).contains("pad_lower") && (**object).contains("pad_upper"))) {
    return refuse(member_path(path, "pad"), "pad, or pad_lower and pad_upper", "neither (missing)");
  }
  return {};
}

Result<void> check_operation_graph(const json::value& value, const std::string& path) {
  auto found = members_of(value, path, graph_members, graph_members.size());
  if (!found) {
    return std::unexpected(found.error());
  }
  Members& members = *found;
  if (auto ok = one_of(*members["finalizeMode"], member_path(path, "finalizeMode"), finalize_modes,
                       "a finalize mode (" + listed(finalize_modes) + ")");
      !ok) {
    return ok;
  }
  if (auto ok =
          boolean_at(*members["isDynamicShapeEnabled"], member_path(path, "isDynamicShapeEnabled"));
      !ok) {
    return ok;
  }
  const std::string tensors_path = member_path(path, "tensors");
  auto tensor_list = array_at(*members["tensors"], tensors_path);
  if (!tensor_list) {
    return std::unexpected(tensor_list.error());
  }
  TensorRanks tensors;
  for (std::size_t i = 0; i < (*tensor_list)->size(); ++i) {
    if (auto ok = check_tensor((**tensor_list)[i], element_path(tensors_path, i), tensors); !ok) {
      return ok;
    }
  }
  const std::string nodes_path = member_path(path, "nodes");
  auto node_list = array_at(*members["nodes"], nodes_path);
  if (!node_list) {
    return std::unexpected(node_list.error());
  }
  for (std::size_t i = 0; i < (*node_list)->size(); ++i) {
    if (auto ok = check_node((**node_list)[i], element_path(nodes_path, i), tensors); !ok) {
      return ok;
    }
  }
  return {};
}

// Whether every byte is a base64 digit (A-Z, a-z, 0-9, + or /). A cubin is most of a document:
// the loop has no early exit and no table, so the compiler vectorizes it (measured 6x faster
// than a table look-up per byte, and find_first_not_of compared each byte with the alphabet).
bool base64_digits_only(std::string_view text) {
  bool all = true;
  for (const char ch : text) {
    const auto c = static_cast<std::uint8_t>(ch);
    all &= static_cast<std::uint8_t>(c - 'A') < 26 || static_cast<std::uint8_t>(c - 'a') < 26 ||
           static_cast<std::uint8_t>(c - '0') < 10 || c == '+' || c == '/';
  }
  return all;
}

bool is_base64(std::string_view text) {
  const std::size_t data = text.find_last_not_of('=') + 1;  // npos + 1 == 0 for all '='
  return text.size() % 4 == 0 && text.size() - data <= 2 &&
         base64_digits_only(text.substr(0, data));
}

// One compiled kernel of an entry's value. Its members were read from libcudnn_graph.so's
// RuntimeKernel::from_json, not from a document (the CPU compiles no kernels): their types are
// checked, members not listed pass.
Result<void> check_kernel(const json::value& value, const std::string& path) {
  auto object = object_at(value, path);
  if (!object) {
    return std::unexpected(object.error());
  }
  for (const std::string_view name : {"cubin", "kernelName"}) {
    const json::value* member = (**object).if_contains(name);
    if (member != nullptr && !member->is_string()) {
      return refuse(member_path(path, name), "a string", shown(*member));
    }
  }
  if (const json::value* cubin = (**object).if_contains("cubin");
      cubin != nullptr && !is_base64(cubin->get_string())) {
    return refuse(member_path(path, "cubin"), "base64 text", shown(*cubin));
  }
  const json::value* params = (**object).if_contains("kernelParams");
  if (params == nullptr) {
    return {};
  }
  const std::string params_path = member_path(path, "kernelParams");
  auto params_object = object_at(*params, params_path);
  if (!params_object) {
    return std::unexpected(params_object.error());
  }
  if (const json::value* raw = (**params_object).if_contains("rawData");
      raw != nullptr && (!raw->is_string() || !is_base64(raw->get_string()))) {
    return refuse(member_path(params_path, "rawData"), "base64 text", shown(*raw));
  }
  const json::value* offsets = (**params_object).if_contains("offsets");
  if (offsets == nullptr) {
    return {};
  }
  const std::string offsets_path = member_path(params_path, "offsets");
  auto offset_list = array_at(*offsets, offsets_path);
  if (!offset_list) {
    return std::unexpected(offset_list.error());
  }
  for (std::size_t i = 0; i < (*offset_list)->size(); ++i) {
    const std::string at = element_path(offsets_path, i);
    auto offset = object_at((**offset_list)[i], at);
    if (!offset) {
      return std::unexpected(offset.error());
    }
    for (const std::string_view name : {"value", "size", "idx_shape_update_fn"}) {
      if (const json::value* number = (**offset).if_contains(name); number != nullptr) {
        if (auto ok = integer_at(*number, member_path(at, name), 0, int32_max); !ok) {
          return std::unexpected(ok.error());
        }
      }
    }
    for (const std::string_view name : {"update_as", "name"}) {
      if (const json::value* text = (**offset).if_contains(name);
          text != nullptr && !text->is_string()) {
        return refuse(member_path(at, name), "a string", shown(*text));
      }
    }
  }
  return {};
}

// Knob type -> choice, as cuDNN reads them (it takes each choice as an int).
Result<void> check_knob_choices(const json::value& value, const std::string& path) {
  auto knobs = object_at(value, path);
  if (!knobs) {
    return std::unexpected(knobs.error());
  }
  for (const auto& knob : **knobs) {
    const std::string at = member_path(path, knob.key());
    if (auto choice = integer_at(knob.value(), at, -int32_max, int32_max); !choice) {
      return std::unexpected(choice.error());
    }
  }
  return {};
}

Result<void> check_key(const json::value& value, const std::string& path) {
  auto found = members_of(value, path, key_members, 1);
  if (!found) {
    return std::unexpected(found.error());
  }
  // cuDNN 9.19 picks the key class from a table by "type" without a bound (3 crashed).
  if (auto ok = integer_at(*found->at("type"), member_path(path, "type"), 0, 2); !ok) {
    return std::unexpected(ok.error());
  }
  for (const auto& [name, member] : *found) {
    const std::string at = member_path(path, name);
    Result<void> ok;
    if (name == "engineId" || name == "bpa_a" || name == "bpa_b" || name == "bpa_c") {
      ok = passed(integer_at(*member, at, 0, int32_max));
    } else if (name == "shader_hash_key") {
      if (!member->is_uint64() && !(member->is_int64() && member->get_int64() >= 0)) {
        ok = refuse(at, "an unsigned 64-bit integer", shown(*member));
      }
    } else if (name == "check_specialization") {
      if (!member->is_bool() && !member->is_int64()) {
        ok = refuse(at, "true, false or an integer", shown(*member));
      }
    } else if (name == "operationGraph") {
      ok = check_operation_graph(*member, at);
    } else if (name == "knobChoices") {
      ok = check_knob_choices(*member, at);
    }
    if (!ok) {
      return ok;
    }
  }
  return {};
}

Result<void> check_entry(const json::value& value, const std::string& path) {
  auto found = members_of(value, path, entry_members, entry_members.size());
  if (!found) {
    return std::unexpected(found.error());
  }
  if (auto ok = check_key(*found->at("key"), member_path(path, "key")); !ok) {
    return ok;
  }
  const std::string value_path = member_path(path, "value");
  auto list = array_at(*found->at("value"), value_path);
  if (!list) {
    return std::unexpected(list.error());
  }
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    if (auto ok = check_kernel((**list)[i], element_path(value_path, i)); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace

Result<void> check_cache_schema(const json::value& document) {
  // Whether members beyond 9.19's pass: decided by the document's own version, read first.
  const json::object* root = document.if_object();
  const json::value* declared = root != nullptr ? root->if_contains("cudnnVersion") : nullptr;
  struct Strictness {
    explicit Strictness(bool allow) { unknown_members_allowed = allow; }
    Strictness(const Strictness&) = delete;
    Strictness& operator=(const Strictness&) = delete;
    ~Strictness() { unknown_members_allowed = false; }  // restored on every way out
  } strictness(declared != nullptr && declared->is_int64() && declared->as_int64() != 91900);
  auto found = members_of(document, "", root_members, root_members.size());
  if (!found) {
    return std::unexpected(found.error());
  }
  Members& members = *found;
  // cuDNN compares both with its own (9.19 takes exactly 91900 and schema 4) and says so.
  if (auto version = integer_at(*members["cudnnVersion"], "cudnnVersion", 0, int32_max); !version) {
    return std::unexpected(version.error());
  }
  if (auto schema = integer_at(*members["schemaVersion"], "schemaVersion", 0, int32_max); !schema) {
    return std::unexpected(schema.error());
  }
  if (auto ok = check_operation_graph(*members["operationGraph"], "operationGraph"); !ok) {
    return ok;
  }
  auto entries = array_at(*members["kernel_cache"], "kernel_cache");
  if (!entries) {
    return std::unexpected(entries.error());
  }
  for (std::size_t i = 0; i < (*entries)->size(); ++i) {
    if (auto ok = check_entry((**entries)[i], element_path("kernel_cache", i)); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace dnngraph::detail
