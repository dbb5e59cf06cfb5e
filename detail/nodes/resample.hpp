// Pooling nodes over cuDNN's resample operations. What resample and resample_backward share (the
// mode and window checked against the tensors, the output-size arithmetic, the backend Resample
// descriptor), and the forward node: Y [N, C, out...] from X [N, C, spatial...] (2 or 3 spatial
// dims; Y follows X's layout) and, for max pooling on request, Index (Int8, Y's dims and layout):
// where each maximum was in its window, for the backward pass.
#pragma once

#include "api/node_attributes.hpp"
#include "backend/resample.hpp"
#include "detail/nodes/node.hpp"

#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dnngraph::detail {

// What the user set on either node's attributes.
struct ResampleSettings {
  std::optional<ResampleMode> mode;
  std::optional<std::vector<std::int64_t>> window, stride, pre_padding, post_padding;
  std::optional<DataType> compute;

  template <class A>
  [[nodiscard]] static ResampleSettings of(const ResampleWindowAttributes<A>& a) {
    return {a.mode(),        a.window(),       a.stride(),
            a.pre_padding(), a.post_padding(), a.compute_data_type()};
  }
};

// The settled mode and geometry, one value per spatial dim each.
struct ResampleWindow {
  ResampleMode mode = ResampleMode::MaxPool;
  std::vector<std::int64_t> window, stride, pre_padding, post_padding;
};

// The base of both pooling nodes: their settings, the checks they share and the descriptor.
class ResampleNodeBase : public Node {
 public:
  // bfloat16_resample when a tensor the node reads or writes is BFloat16 (the table skips the
  // engines that pool BFloat16 wrong: known issue resample-bfloat16-without-tensor-core).
  void note_traits(GraphTraits& traits) const override;

 protected:
  ResampleNodeBase(std::string name, ResampleSettings settings, std::vector<TensorPtr> inputs,
                   std::vector<TensorPtr> outputs)
      : Node(std::move(name), std::move(inputs), std::move(outputs)),
        settings_(std::move(settings)) {}

  // The mode, compute type and geometry against `t` (X, or dY: its rank gives the spatial dim
  // count; `role` names it); settles window_, which the rest reads.
  [[nodiscard]] Result<void> settle_window(const char* role, const TensorAttributes& t,
                                           const GraphContext& context);
  // t is [N, C, spatial...] of rank 4 or 5, in Half, BFloat16 or Float.
  [[nodiscard]] Result<void> check_pooled(const char* role, const TensorAttributes& t) const;
  // A pooled tensor's data type: Half, BFloat16 or Float; BFloat16 is refused below 9.27 (known
  // issue resample-bfloat16-wrong; from 9.27 plan choice skips the engines that pool it wrong).
  [[nodiscard]] Result<void> check_pooling_type(const char* role, const TensorAttributes& t) const;
  // [N, C, out...] for an input of `dims` (t's, or those dX will have): out = floor((in + pre +
  // post - window) / stride) + 1, an error where it would be below 1 or overflow int64.
  [[nodiscard]] Result<std::vector<std::int64_t>> pooled_dims(
      const char* role, const TensorAttributes& t, const std::vector<std::int64_t>& dims) const;
  // An index tensor (Index, the forward's output, or the backward's input) is Int8.
  [[nodiscard]] Result<void> check_index(const TensorAttributes& index) const;
  [[nodiscard]] const ResampleWindow& window() const noexcept { return window_; }
  // The finalized backend Resample descriptor for window().
  [[nodiscard]] backend::Expected<backend::Resample> make_resample() const;
  // Op (the forward or backward operation) with the Resample descriptor and each present role's
  // tensor, finalized; the descriptor is kept with it.
  template <class Op>
  [[nodiscard]] Result<LoweredOperation> lower_resample(
      std::span<const std::pair<const TensorPtr*,
                                backend::Expected<void> (Op::*)(const backend::Tensor&)>>
          roles,
      const TensorTable& tensors) const {
    auto resample = make_resample();
    auto op = Op::create();
    if (!resample || !op) {
      return std::unexpected(lowering_failed(!resample ? resample.error() : op.error()));
    }
    auto ok = op->set_resample(*resample);
    auto lowered_op = lower_roles<Op>(std::move(*op), std::move(ok), roles, tensors);
    if (lowered_op) {
      lowered_op->parts.push_back(std::move(*resample));
    }
    return lowered_op;
  }

 private:
  ResampleSettings settings_;
  ResampleWindow window_;
};

class ResampleNode final : public ResampleNodeBase {
 public:
  // index: null unless the attributes ask for it.
  ResampleNode(const ResampleAttributes& attributes, TensorPtr x, TensorPtr y, TensorPtr index);

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Resample; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  [[nodiscard]] Result<void> settle_index(const TensorAttributes& y, const GraphContext& context);

  TensorPtr index_;  // outputs()[1] when asked for, else null
};

}  // namespace dnngraph::detail
