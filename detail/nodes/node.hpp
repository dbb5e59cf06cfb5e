// detail::Node: one operation of a Graph. A node checks its own attributes and inputs, infers
// its outputs (dims, strides, data type) and lowers itself to backend operation descriptors.
#pragma once

#include "api/error.hpp"
#include "api/node_attributes.hpp"
#include "api/tensor_attributes.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/nodes/lowering.hpp"

#include <gsl/pointers>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::detail {

using TensorPtr = std::shared_ptr<TensorAttributes>;

// A tensor with the dims it has in one shape inference: its own, or execute-time overrides.
struct ShapedTensor {
  gsl::not_null<const TensorAttributes*> tensor;
  gsl::not_null<const std::vector<std::int64_t>*> dims;
  const std::vector<std::int64_t>* strides = nullptr;  // null: the caller knows none
};

// Every node kind, and below it its name as errors use it ("matmul 'mm'"). A new kind is a row
// in each, plus its room in detail/nodes/ (see docs/development.md).
enum class NodeKind : std::uint8_t {
  Matmul,
  Pointwise,
  ConvFprop,
  ConvDgrad,
  ConvWgrad,
  Reduction,
  LayerNorm,
  RmsNorm,
  Reshape,
  Sdpa,
  SdpaBackward,
  LayerNormBackward,
  RmsNormBackward,
  BatchNorm,
  BatchNormBackward,
  Rng,
  InstanceNorm,
  InstanceNormBackward,
  GenStats,
  BnFinalize,
  Resample,
  ResampleBackward,
  Concatenate,
  Slice,
  DbnWeight,
  AdaLayerNorm,
  AdaLayerNormBackward,
  SdpaFp8,
  SdpaFp8Backward,
};
inline constexpr std::array node_kinds{
    std::pair{NodeKind::Matmul, std::string_view("matmul")},
    std::pair{NodeKind::Pointwise, std::string_view("pointwise")},
    std::pair{NodeKind::ConvFprop, std::string_view("conv_fprop")},
    std::pair{NodeKind::ConvDgrad, std::string_view("conv_dgrad")},
    std::pair{NodeKind::ConvWgrad, std::string_view("conv_wgrad")},
    std::pair{NodeKind::Reduction, std::string_view("reduction")},
    std::pair{NodeKind::LayerNorm, std::string_view("layernorm")},
    std::pair{NodeKind::RmsNorm, std::string_view("rmsnorm")},
    std::pair{NodeKind::Reshape, std::string_view("reshape")},
    std::pair{NodeKind::Sdpa, std::string_view("sdpa")},
    std::pair{NodeKind::SdpaBackward, std::string_view("sdpa_backward")},
    std::pair{NodeKind::LayerNormBackward, std::string_view("layernorm_backward")},
    std::pair{NodeKind::RmsNormBackward, std::string_view("rmsnorm_backward")},
    std::pair{NodeKind::BatchNorm, std::string_view("batchnorm")},
    std::pair{NodeKind::BatchNormBackward, std::string_view("batchnorm_backward")},
    std::pair{NodeKind::Rng, std::string_view("rng")},
    std::pair{NodeKind::InstanceNorm, std::string_view("instancenorm")},
    std::pair{NodeKind::InstanceNormBackward, std::string_view("instancenorm_backward")},
    std::pair{NodeKind::GenStats, std::string_view("genstats")},
    std::pair{NodeKind::BnFinalize, std::string_view("bn_finalize")},
    std::pair{NodeKind::Resample, std::string_view("resample")},
    std::pair{NodeKind::ResampleBackward, std::string_view("resample_backward")},
    std::pair{NodeKind::Concatenate, std::string_view("concatenate")},
    std::pair{NodeKind::Slice, std::string_view("slice")},
    std::pair{NodeKind::DbnWeight, std::string_view("dbn_weight")},
    std::pair{NodeKind::AdaLayerNorm, std::string_view("adalayernorm")},
    std::pair{NodeKind::AdaLayerNormBackward, std::string_view("adalayernorm_backward")},
    std::pair{NodeKind::SdpaFp8, std::string_view("sdpa_fp8")},
    std::pair{NodeKind::SdpaFp8Backward, std::string_view("sdpa_fp8_backward")},
};

// The table holds every kind, in the enum's order (name_of indexes it).
[[nodiscard]] constexpr bool node_kinds_in_order() noexcept {
  for (std::size_t i = 0; i < node_kinds.size(); ++i) {
    if (static_cast<std::size_t>(node_kinds[i].first) != i) {
      return false;
    }
  }
  return node_kinds.back().first == NodeKind::SdpaFp8Backward;
}
static_assert(node_kinds_in_order(), "detail/nodes/node.hpp: node_kinds is out of NodeKind order");

[[nodiscard]] constexpr std::string_view name_of(NodeKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < node_kinds.size() ? node_kinds[i].second : "node";
}
// t's data type as errors name it ("Half"), "none" where it has none.
[[nodiscard]] std::string data_type_name(const TensorAttributes& t);

class Node {
 public:
  Node(std::string name, std::vector<TensorPtr> inputs, std::vector<TensorPtr> outputs,
       std::vector<TensorPtr> internals = {})
      : name_(std::move(name)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        internals_(std::move(internals)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node() = default;

  [[nodiscard]] virtual NodeKind kind() const noexcept = 0;
  // Checks attributes and inputs (which are settled), then settles the outputs.
  [[nodiscard]] virtual Result<void> infer(const GraphContext& context) = 0;
  // The output's dims for the given input dims (in inputs() order); errors name the tensors.
  // infer() uses it on the build shapes, execute-time override checks on the override shapes.
  // The default refuses: a node kind that cannot say its output shape takes no overrides.
  [[nodiscard]] virtual Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const;
  // The dims of every output, then of every internal, in outputs() and internals() order, for
  // the given input dims: what execute-time override checks settle. The default is
  // output_dims() for a node of one output and no internals, and refuses any other node; a
  // node with several outputs (sdpa: O and Stats) or internals overrides it.
  [[nodiscard]] virtual Result<std::vector<std::vector<std::int64_t>>> all_output_dims(
      std::span<const ShapedTensor> inputs) const;
  // Whether override shapes given to a dynamic-shape graph of this node (the path below cuDNN
  // 9.21) were proven exact on the H200. Unproven kinds refuse overrides there. Measured with
  // cuDNN 9.19: conv_fprop returned success and wrong numbers; a matmul with any pointwise node
  // after it (bias, ReLU, bias + ReLU; heuristics A, B, Fallback; engine 7) failed in the driver
  // at execute; a matmul alone ran exact.
  [[nodiscard]] virtual bool exact_overrides_on_dynamic_graphs() const noexcept { return false; }
  // Adds what the known-issues table asks of this node (kind, layouts) to traits.
  virtual void note_traits(GraphTraits& /*traits*/) const {}
  // Needs every input and output in `tensors`.
  [[nodiscard]] virtual Result<LoweredOperation> lower(const TensorTable& tensors,
                                                       const GraphContext& context) const = 0;
  // Every backend operation of the node, in order. Most nodes are one operation (the default:
  // lower()); a composite node (sdpa: the matmul, mask, softmax, matmul pattern cuDNN's fused
  // attention engines match) overrides this and wires its internals() between its operations.
  [[nodiscard]] virtual Result<std::vector<LoweredOperation>> lower_all(
      const TensorTable& tensors, const GraphContext& context) const;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::vector<TensorPtr>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const std::vector<TensorPtr>& outputs() const noexcept { return outputs_; }
  // Virtual graph tensors a composite node both makes and reads (no other node sees them):
  // validation counts them as produced and consumed, infer() settles them, lowering adds them
  // to the TensorTable like any tensor (so they get uids from the graph).
  [[nodiscard]] const std::vector<TensorPtr>& internals() const noexcept { return internals_; }
  // The internals cuDNN must find in memory, which the user never sees (sdpa_backward's Float
  // dQ accumulator): virtual to the graph (no uid in the user's variant pack, no overrides),
  // lowered with memory that execute() takes from the start of the caller's workspace, counted
  // in the workspace size. Their size is fixed at build: a node with any refuses overrides.
  [[nodiscard]] virtual std::vector<const TensorAttributes*> workspace_tensors() const {
    return {};
  }
  // "matmul 'mm'", for error messages.
  [[nodiscard]] std::string describe() const;

 protected:
  // Gives an output the inferred dims (or checks the dims the user set), packed strides if none
  // were set, and a data type: virtual → intermediate (Float if unset), else the io type.
  [[nodiscard]] Result<void> settle_output(TensorAttributes& out,
                                           const std::vector<std::int64_t>& inferred_dims,
                                           const GraphContext& context) const;
  // A scalar input (a norm's epsilon or momentum): one Float value in `rank` dims of 1; a
  // by-value one finite and within [0, max].
  [[nodiscard]] Result<void> check_scalar_input(const char* role, const TensorAttributes& t,
                                                std::size_t rank, float max) const;
  // An image input of a per-channel node (genstats' X, dbn_weight's X and dY): rank 4 or 5
  // ([N, C, (D,) H, W]) in Half, BFloat16 or Float; `role` names it in errors ("input X").
  [[nodiscard]] Result<void> check_image_input(const char* role, const TensorAttributes& t) const;
  // A per-channel Float input (bn_finalize's sums and parameters, dbn_weight's statistics and
  // scale): `dims` ([1, C, 1, ...]) and Float; `whose` ends the dims error ("the sum's").
  [[nodiscard]] Result<void> check_channel_input(const char* role, const TensorAttributes& t,
                                                 const std::vector<std::int64_t>& dims,
                                                 std::string_view whose) const;
  // A Float statistic output (a norm's mean, genstats' sums): Float unless set, laid out like
  // `like` unless the user set dims or strides, then settle_output; any other type is an error.
  [[nodiscard]] Result<void> settle_statistic_output(const char* role, TensorAttributes& t,
                                                     const std::vector<std::int64_t>& dims,
                                                     const TensorAttributes& like,
                                                     const GraphContext& context) const;
  // Gives each by-value input without dims (Graph::tensor(float)) all-1 dims of `rank` (and
  // all-1 strides unless the user set some), so it broadcasts against the node's other
  // operands. User strides of another rank are an error, never replaced.
  [[nodiscard]] Result<void> settle_scalar_inputs(std::size_t rank) const;
  // An enum attribute the user set must be one of its enumerators; `type` names the enum.
  template <class E>
  [[nodiscard]] Result<void> check_known(std::string_view attribute, std::string_view type,
                                         std::optional<E> value) const {
    if (!value || is_known(*value)) {
      return {};
    }
    return unknown_value(attribute, type, static_cast<long long>(*value));
  }
  // A node that moves data and computes nothing (reshape, concatenate, slice) takes no compute
  // data type: one the user set is refused.
  [[nodiscard]] Result<void> check_no_compute(std::optional<DataType> own) const;
  // A data-movement node reads tensors in device memory or node outputs: an input passed by
  // value (a host scalar) is refused, naming its role ("X", "input 1").
  [[nodiscard]] Result<void> check_not_by_value(const std::string& role,
                                                const TensorAttributes& t) const;
  // Y's data type for a node that copies `from` into Y (reshape, concatenate, slice): from's
  // unless set; another one only where `may_convert` (a virtual source, inside the fused
  // kernel), else UnsupportedDataType naming both types and ending with `why`. `role` names from
  // in messages ("X", "input 0").
  [[nodiscard]] Result<void> settle_copied_type(const std::string& role,
                                                const TensorAttributes& from, TensorAttributes& y,
                                                bool may_convert, std::string_view why) const;
  // The node's own compute data type, where the user set one, is a DataType (the graph's is
  // checked by the Graph).
  [[nodiscard]] Result<void> check_known_compute(std::optional<DataType> own) const;
  // A node that computes in Float only (the norms, the batch statistics): its own compute type,
  // else the graph's, else Float, must be Float; `why` ends the error ("normalization computes
  // in Float").
  [[nodiscard]] Result<void> check_float_compute(std::optional<DataType> own,
                                                 const GraphContext& context,
                                                 const char* why) const;
  // What the three convolution nodes check alike: their compute type and convolution mode.
  template <class A>
  [[nodiscard]] Result<void> check_known_convolution(const A& attributes) const {
    if (auto ok = check_known_compute(attributes.compute_data_type()); !ok) {
      return ok;
    }
    return check_known("convolution mode", "ConvolutionMode",
                       std::optional(attributes.convolution_mode()));
  }
  // Sets each present role's lowered tensor on op with its setter, in order, then finalizes op:
  // the lowering of a one-operation node whose attributes are all tensors (the norms). `ok` is
  // what setting op's other attributes gave.
  template <class Op>
  [[nodiscard]] Result<LoweredOperation> lower_roles(
      Op op, backend::Expected<void> ok,
      std::span<const std::pair<const TensorPtr*,
                                backend::Expected<void> (Op::*)(const backend::Tensor&)>>
          roles,
      const TensorTable& tensors) const {
    if (!ok) {
      return std::unexpected(lowering_failed(ok.error()));
    }
    for (const auto& [tensor, setter] : roles) {
      if (!*tensor) {
        continue;
      }
      auto found = lowered(tensors, **tensor);
      if (!found) {
        return std::unexpected(found.error());
      }
      if (auto set = (op.*setter)(**found); !set) {
        return std::unexpected(lowering_failed(set.error()));
      }
    }
    if (auto finalized = op.finalize(); !finalized) {
      return std::unexpected(lowering_failed(finalized.error()));
    }
    return LoweredOperation{std::move(op), {}};
  }
  // "lower <node>: <cuDNN's status>".
  [[nodiscard]] Error lowering_failed(const backend::Status& status) const;
  // The finalized backend tensor of t; an InvalidState error if lowering skipped it.
  [[nodiscard]] Result<const backend::Tensor*> lowered(const TensorTable& tensors,
                                                       const TensorAttributes& t) const;

 private:
  [[nodiscard]] Result<void> unknown_value(std::string_view attribute, std::string_view type,
                                           long long value) const;

  std::string name_;
  std::vector<TensorPtr> inputs_;
  std::vector<TensorPtr> outputs_;
  std::vector<TensorPtr> internals_;
};

}  // namespace dnngraph::detail
