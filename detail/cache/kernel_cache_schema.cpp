// The kernel cache document schema, learned from cuDNN 9.19: documents it serializes on the CPU
// (operation graphs of every node kind dnngraph lowers; the node tables are in
// detail/cache/kernel_cache_operations.hpp) and the member names and type checks in
// libcudnn_graph.so. cuDNN type-checks most scalar members itself but indexes tables with key.type,
// iterates tensors/nodes without checking they are arrays, copies conv pad/stride/dilation into
// fixed arrays without a length check and divides by reduction dims: each of those crashed the
// process (issue 16). This file refuses every such shape first, and holds the members of the
// other node kinds to the same rules (spatial arrays as long as the spatial rank, denominators
// and group counts of at least 1, indices in range).
//
// The kernel_cache entries are checked in kernel_cache_entry_schema.cpp; single values (types,
// ranges, enum strings) by detail/cache/json_checks.hpp.
#include "detail/cache/kernel_cache_schema.hpp"

#include "detail/cache/json_checks.hpp"
#include "detail/cache/kernel_cache_operations.hpp"
#include "detail/cache/kernel_cache_schema_parts.hpp"

#include <boost/json.hpp>
#include <gsl/util>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

namespace {

namespace json = boost::json;

using namespace cache_schema;  // the node tables (detail/cache/kernel_cache_operations.hpp)
using namespace json_checks;

// cuDNN's tensors hold at most CUDNN_DIM_MAX (8) dims in fixed arrays.
constexpr std::size_t max_rank = 8;

constexpr std::array<std::string_view, 4> root_members{"cudnnVersion", "schemaVersion",
                                                       "operationGraph", "kernel_cache"};
constexpr std::array<std::string_view, 4> graph_members{"finalizeMode", "tensors", "nodes",
                                                        "isDynamicShapeEnabled"};
// All but the last always there; isRagged (a ragged tensor's offsets, one tensor in an array)
// only on ragged tensors.
constexpr std::array<std::string_view, 11> tensor_members{
    "name",      "dataType", "dim",          "stride",     "isVirtual", "isByValue",
    "vectCount", "vectDim",  "ptrAlignment", "reordering", "isRagged"};

constexpr std::array<std::string_view, 4> reorderings{
    "CUDNN_TENSOR_REORDERING_NONE", "CUDNN_TENSOR_REORDERING_INT8x32",
    "CUDNN_TENSOR_REORDERING_F16x16", "CUDNN_TENSOR_REORDERING_F8_128x4"};

// A tensor's name is its uid in decimal, as cuDNN writes any int64 (std::to_string): cuDNN
// converts it with std::stoll, which throws (and so aborts the process from a C API) on anything
// else and on a value beyond int64. Only that form: "07" and "7" would be one uid to cuDNN and
// two names to the uniqueness check.
bool is_uid(std::string_view name) {
  std::int64_t uid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), uid);
  return ec == std::errc() && end == name.data() + name.size() && std::to_string(uid) == name;
}

// Tensor name -> rank, of one operation graph.
using TensorRanks = std::map<std::string, std::size_t, std::less<>>;

// A tensor's name (its uid) and rank.
struct TensorSeen {
  std::string_view name;
  std::size_t rank = 0;
};

// A tensor of the graph, or (nested) the offsets of a ragged one, whose own members do not
// nest further: checked.
Result<TensorSeen> checked_tensor(const json::value& value, const std::string& path, bool nested) {
  const Names known = std::span(tensor_members).first(tensor_members.size() - (nested ? 1 : 0));
  auto found = members_of(value, path, known, tensor_members.size() - 1);
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
  const auto rank = gsl::narrow_cast<std::int64_t>(dims->size());
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
      return std::unexpected(ok.error());
    }
  }
  if (const auto ragged = members.find("isRagged"); ragged != members.end()) {
    // cuDNN 9.19 takes exactly one offsets tensor per ragged tensor.
    const std::string ragged_path = member_path(path, "isRagged");
    auto offsets = array_at(*ragged->second, ragged_path);
    if (!offsets) {
      return std::unexpected(offsets.error());
    }
    if ((*offsets)->size() != 1) {
      return refuse(ragged_path, "an array of one tensor (the ragged offsets)",
                    std::to_string((*offsets)->size()) + " elements");
    }
    if (auto ok = checked_tensor((**offsets)[0], element_path(ragged_path, 0), true); !ok) {
      return std::unexpected(ok.error());
    }
  }
  return TensorSeen{std::string_view(*name), dims->size()};
}

// A tensor of the graph, checked and added to `tensors`, whose names are unique.
Result<void> check_tensor(const json::value& value, const std::string& path, TensorRanks& tensors) {
  auto tensor = checked_tensor(value, path, false);
  if (!tensor) {
    return std::unexpected(tensor.error());
  }
  if (!tensors.emplace(std::string(tensor->name), tensor->rank).second) {
    return refuse(member_path(path, "name"), "a uid no other tensor of the graph has",
                  "\"" + std::string(tensor->name) + "\" again");
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

// What a node's members are checked against besides the graph's tensors.
struct NodeShape {
  std::size_t rank = 0;           // the rank the node's tensors share
  std::int64_t spatial_rank = 0;  // convolutions and resamples: rank - 2
  std::size_t list_length = 0;    // the length of the node's tensor list, where it has one
};

// A tensor the member names, of the node's rank: cuDNN reads the dims of a node's tensors side
// by side, past the end of a shorter one.
Result<void> check_tensor_of_rank(const json::value& value, const std::string& path,
                                  const TensorRanks& tensors, std::size_t rank) {
  auto found = tensor_rank(value, path, tensors);
  if (!found) {
    return std::unexpected(found.error());
  }
  if (*found != rank) {
    return refuse(path, "a tensor of rank " + std::to_string(rank) + " like the node's others",
                  "one of rank " + std::to_string(*found));
  }
  return {};
}

// One [numerator, denominator] per spatial dim (cudnnFraction_t, as cuDNN writes a resample's
// window, paddings and strides); cuDNN divides by the denominator.
Result<void> check_ratios(const json::value& value, const std::string& path, std::size_t length,
                          std::int64_t lowest) {
  auto list = array_at(value, path);
  if (!list) {
    return std::unexpected(list.error());
  }
  if ((*list)->size() != length) {
    return refuse(path, "an array of " + std::to_string(length) + " [numerator, denominator] pairs",
                  std::to_string((*list)->size()) + " elements");
  }
  for (std::size_t i = 0; i < length; ++i) {
    const std::string at = element_path(path, i);
    auto pair = array_at((**list)[i], at);
    if (!pair) {
      return std::unexpected(pair.error());
    }
    if ((*pair)->size() != 2) {
      return refuse(at, "a [numerator, denominator] pair", shown((**list)[i]));
    }
    if (auto ok = integer_at((**pair)[0], element_path(at, 0), lowest, int32_max); !ok) {
      return std::unexpected(ok.error());
    }
    if (auto ok = integer_at((**pair)[1], element_path(at, 1), 1, int32_max); !ok) {
      return std::unexpected(ok.error());
    }
  }
  return {};
}

Result<void> check_member(const Member& member, const json::value& value, const std::string& path,
                          const TensorRanks& tensors, const NodeShape& shape) {
  switch (member.kind) {
    case Kind::Tensor: return check_tensor_of_rank(value, path, tensors, shape.rank);
    case Kind::AnyRankTensor: return passed(tensor_rank(value, path, tensors));
    case Kind::TensorList: {
      auto list = array_at(value, path);
      if (!list) {
        return std::unexpected(list.error());
      }
      for (std::size_t i = 0; i < (*list)->size(); ++i) {
        if (auto ok = check_tensor_of_rank((**list)[i], element_path(path, i), tensors, shape.rank);
            !ok) {
          return ok;
        }
      }
      return {};
    }
    case Kind::Number: return number_at(value, path);
    case Kind::Axis:
      return passed(integer_at(value, path, 0, static_cast<std::int64_t>(shape.rank) - 1));
    case Kind::ListIndex:
      return passed(integer_at(value, path, -1, static_cast<std::int64_t>(shape.list_length) - 1));
    case Kind::Count: return passed(integer_at(value, path, 1, int32_max));
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
    case Kind::ResampleMode:
      return one_of(value, path, resample_modes, "a cudnnResampleMode_t name");
    case Kind::PaddingMode: return one_of(value, path, padding_modes, "a cudnnPaddingMode_t name");
    case Kind::NanPropagation:
      return one_of(value, path, nan_propagations,
                    "CUDNN_NOT_PROPAGATE_NAN or CUDNN_PROPAGATE_NAN");
    case Kind::BnFinalizeMode:
      return one_of(value, path, bn_finalize_modes, "a cudnnBnFinalizeStatsMode_t name");
    case Kind::RngDistribution:
      return one_of(value, path, rng_distributions, "CUDNN_RNG_DISTRIBUTION_BERNOULLI");
    case Kind::Spatial: {
      const std::int64_t lowest = member.name.starts_with("pad") ? 0 : 1;
      const auto length = static_cast<std::size_t>(shape.spatial_rank);
      return passed(integers_at(value, path, length, length, lowest, int32_max));
    }
    case Kind::SpatialRank:
      return passed(integer_at(value, path, shape.spatial_rank, shape.spatial_rank));
    case Kind::SpatialRatio:
      return check_ratios(value, path, static_cast<std::size_t>(shape.spatial_rank),
                          member.name.ends_with("Pad") ? 0 : 1);
    case Kind::PerDim: {
      const std::int64_t lowest = member.name == "strides" ? 1 : 0;
      return passed(integers_at(value, path, shape.rank, shape.rank, lowest, int64_max));
    }
  }
  return refuse(path, "a known member kind", shown(value));
}

// The node's rank (set by its first tensor member of the shared rank), spatial rank and tensor
// list length, after checking the members they come from name tensors.
Result<NodeShape> node_shape(const json::object& node, const std::string& path,
                             const Operation& operation, std::span<const Member> members,
                             const TensorRanks& tensors) {
  NodeShape shape;
  for (const Member& member : members) {
    const json::value* tensor = node.if_contains(member.name);
    if (member.kind == Kind::Tensor && tensor != nullptr) {
      auto found = tensor_rank(*tensor, member_path(path, member.name), tensors);
      if (!found) {
        return std::unexpected(found.error());
      }
      shape.rank = *found;
      break;
    }
  }
  for (const Member& member : members) {
    const json::value* list = node.if_contains(member.name);
    if (member.kind == Kind::TensorList && list != nullptr && list->is_array()) {
      shape.list_length = list->get_array().size();
    }
  }
  if (!operation.spatial_tensor.empty()) {
    shape.spatial_rank = static_cast<std::int64_t>(shape.rank) - 2;
    if (shape.spatial_rank < 1) {
      return refuse(member_path(path, operation.spatial_tensor),
                    "a tensor of rank 3 or more (batch, channels, spatial dims)",
                    "one of rank " + std::to_string(shape.rank));
    }
  }
  return shape;
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
    std::string lowered;
    for (const Operation& known : operations) {
      constexpr std::string_view prefix = "CUDNN_BACKEND_OPERATION_";
      constexpr std::string_view suffix = "_DESCRIPTOR";
      lowered += (lowered.empty() ? "" : ", ") +
                 std::string(known.name.substr(prefix.size(),
                                               known.name.size() - prefix.size() - suffix.size()));
    }
    return refuse(member_path(path, "operation"),
                  "an operation dnngraph lowers (CUDNN_BACKEND_OPERATION_<name>_DESCRIPTOR, "
                  "<name> one of " +
                      lowered + ")",
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
  auto shape = node_shape(**object, path, *operation, members, tensors);
  if (!shape) {
    return std::unexpected(shape.error());
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
    if (auto ok = check_member(member, *member_value, at, tensors, *shape); !ok) {
      return ok;
    }
  }
  const bool convolution = operation->members.data() == convolution_members.data();
  if (convolution && !(**object).contains("pad") &&
      !((**object).contains("pad_lower") && (**object).contains("pad_upper"))) {
    return refuse(member_path(path, "pad"), "pad, or pad_lower and pad_upper", "neither (missing)");
  }
  return {};
}

}  // namespace

Result<void> cache_schema::check_operation_graph(const json::value& value,
                                                 const std::string& path) {
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

Result<void> check_cache_schema(const json::value& document) {
  // Whether members beyond 9.19's pass: decided by the document's own version, read first.
  const json::object* root = document.if_object();
  const json::value* declared = root != nullptr ? root->if_contains("cudnnVersion") : nullptr;
  const UnknownMembersAllowed strictness(declared != nullptr && declared->is_int64() &&
                                         declared->as_int64() != 91900);
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
