// Pooling: the checks both resample nodes share, the backend Resample descriptor, and the forward
// node's shape inference and lowering to OperationResampleForward (attribute names and types as
// cudnn-frontend 1.32's ResampleNode sets them, read for facts: window, stride and paddings as
// CUDNN_TYPE_FRACTION, the index tensor Int8).
#include "detail/nodes/resample.hpp"

#include "backend/operation_resample_forward.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/nodes/convolution.hpp"

#include <gsl/util>

#include <array>
#include <string>

namespace dnngraph::detail {

namespace {

// "3 (of [1, 3])": value i of a list.
std::string list_text(const std::vector<std::int64_t>& values, std::size_t i) {
  return std::to_string(values[i]) + " (of " + to_string(values) + ")";
}

std::vector<cudnnFraction_t> fractions(const std::vector<std::int64_t>& values) {
  std::vector<cudnnFraction_t> out;
  out.reserve(values.size());
  for (const std::int64_t v : values) {
    out.push_back(cudnnFraction_t{v, 1});
  }
  return out;
}

// Where the window reads outside X: max pooling must never pick a padded element, and average
// pooling including padding counts padded elements as zeros (excluding padding skips them).
cudnnPaddingMode_t padding_mode(ResampleMode mode) {
  return mode == ResampleMode::MaxPool ? CUDNN_NEG_INF_PAD : CUDNN_ZERO_PAD;
}

}  // namespace

void ResampleNodeBase::note_traits(GraphTraits& traits) const {
  for (const auto* tensors : {&inputs(), &outputs()}) {
    for (const TensorPtr& t : *tensors) {
      if (t != nullptr && t->data_type() == DataType::BFloat16) {
        traits.bfloat16_resample = true;
      }
    }
  }
}

Result<void> ResampleNodeBase::check_pooled(const char* role, const TensorAttributes& t) const {
  const std::size_t rank = t.dim().size();
  if (rank != 4 && rank != 5) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + role + " " + t.describe() + " has " +
                          std::to_string(rank) + " dims " + to_string(t.dim()) +
                          "; pooling takes 4 ([N, C, H, W]) or 5 ([N, C, D, H, W])");
  }
  return check_pooling_type(role, t);
}

Result<void> ResampleNodeBase::check_pooling_type(const char* role,
                                                  const TensorAttributes& t) const {
  if (t.data_type() == DataType::BFloat16 && workaround_needed(Defect::ResampleBfloat16Wrong)) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": " + role + " " + t.describe() +
                          " is BFloat16; cuDNN before 9.27 pools BFloat16 wrong (most of Y "
                          "wrong, also through cudnn-frontend; known issue "
                          "resample-bfloat16-wrong): use Half or Float, or cuDNN 9.27 or later");
  }
  return check_data_type(describe(), ConvTensor{role, t, t.dim()},
                         {DataType::Half, DataType::BFloat16, DataType::Float});
}

Result<void> ResampleNodeBase::settle_window(const char* role, const TensorAttributes& t,
                                             const GraphContext& context) {
  const std::string node = describe();
  if (!settings_.mode) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": no mode; set_mode(ResampleMode::MaxPool, AvgPoolIncludePadding or "
                          "AvgPoolExcludePadding)");
  }
  if (auto ok = check_known("mode", "ResampleMode", settings_.mode); !ok) {
    return ok;
  }
  if (auto ok = check_known_compute(settings_.compute); !ok) {
    return ok;
  }
  // The type cudnn-frontend's pooling samples compute in; nothing else was tried.
  if (auto ok = check_compute_type(
          node, settings_.compute.value_or(context.compute.value_or(DataType::Float)),
          {DataType::Float});
      !ok) {
    return ok;
  }
  for (const auto& [what, list] :
       {std::pair{"window", &settings_.window}, std::pair{"stride", &settings_.stride}}) {
    if (!*list) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": no " + what + "; set_" + what +
                            "({2, 2}) for example, one value per spatial dim");
    }
  }
  if (auto ok = check_pooled(role, t); !ok) {
    return ok;
  }
  const ConvTensor spatial{role, t, t.dim()};
  auto window = resolve_spatial_list(node, spatial, "window", settings_.window, 1, 1);
  if (!window) return std::unexpected(window.error());
  auto stride = resolve_spatial_list(node, spatial, "stride", settings_.stride, 1, 1);
  if (!stride) return std::unexpected(stride.error());
  auto pre = resolve_spatial_list(node, spatial, "pre-padding", settings_.pre_padding, 0, 0);
  if (!pre) return std::unexpected(pre.error());
  auto post = resolve_spatial_list(node, spatial, "post-padding", settings_.post_padding, 0, 0);
  if (!post) return std::unexpected(post.error());
  // A padding as wide as the window makes a window of padding only: max pooling would give
  // -infinity there and average pooling excluding padding would divide by zero.
  for (std::size_t i = 0; i < window->size(); ++i) {
    for (const auto& [what, padding] :
         {std::pair{"pre-padding", &*pre}, std::pair{"post-padding", &*post}}) {
      if ((*padding)[i] >= (*window)[i]) {
        return make_error(ErrorCode::InvalidAttribute,
                          node + ": " + what + " " + std::to_string(i) + " is " +
                              list_text(*padding, i) + " but the window is " +
                              list_text(*window, i) +
                              "; a padding must be smaller than the window, so that every "
                              "window reads at least one input element");
      }
    }
  }
  window_ = ResampleWindow{*settings_.mode, std::move(*window), std::move(*stride), std::move(*pre),
                           std::move(*post)};
  return {};
}

Result<std::vector<std::int64_t>> ResampleNodeBase::pooled_dims(
    const char* role, const TensorAttributes& t, const std::vector<std::int64_t>& dims) const {
  std::vector<std::int64_t> out{dims[0], dims[1]};
  for (std::size_t i = 0; i < window_.window.size(); ++i) {
    const std::int64_t in = dims[i + 2];
    std::int64_t padded = 0;
    const std::string where =
        describe() + ": dim " + std::to_string(i + 2) + " of " + role + " " + t.describe() +
        " is " + std::to_string(in) + " (padding " + std::to_string(window_.pre_padding[i]) +
        " + " + std::to_string(window_.post_padding[i]) + ", window " +
        std::to_string(window_.window[i]) + ", stride " + std::to_string(window_.stride[i]) + ")";
    if (__builtin_add_overflow(in, window_.pre_padding[i], &padded) ||
        __builtin_add_overflow(padded, window_.post_padding[i], &padded)) {
      return make_error(ErrorCode::InvalidAttribute, where + "; the padded size overflows int64");
    }
    if (padded < window_.window[i]) {
      return make_error(ErrorCode::ShapeMismatch,
                        where + "; the window is larger than the padded input (" +
                            std::to_string(padded) + "), so output dim " + std::to_string(i + 2) +
                            " would be empty (it must be at least 1)");
    }
    out.push_back((padded - window_.window[i]) / window_.stride[i] + 1);
  }
  return out;
}

Result<void> ResampleNodeBase::check_index(const TensorAttributes& index) const {
  // Int8, as cudnn-frontend 1.32's max-pooling training sample declares it. It holds a position
  // within one window; we keep windows to the 128 positions 0 to 127 an Int8 holds whatever
  // cuDNN's encoding (signed or not).
  if (auto ok =
          check_data_type(describe(), ConvTensor{"Index", index, index.dim()}, {DataType::Int8});
      !ok) {
    return ok;
  }
  std::int64_t elements = 1;
  for (const std::int64_t w : window_.window) {
    elements = w > 128 / elements ? 129 : elements * w;
  }
  if (elements > 128) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": the window " + to_string(window_.window) +
                          " has more than 128 elements; an Int8 index holds the positions 0 "
                          "to 127 of a window");
  }
  return {};
}

backend::Expected<backend::Resample> ResampleNodeBase::make_resample() const {
  auto resample = backend::Resample::create();
  if (!resample) {
    return resample;
  }
  const auto window = fractions(window_.window);
  const auto stride = fractions(window_.stride);
  const auto pre = fractions(window_.pre_padding);
  const auto post = fractions(window_.post_padding);
  const auto spatial_dims = gsl::narrow_cast<std::int64_t>(window.size());
  // The spatial dim count first: cuDNN checks the four lists against it. A NaN in a window
  // gives NaN (as torch's pooling does), not the maximum of the other elements.
  auto ok =
      in_order([&] { return resample->set_spatial_dims(spatial_dims); },
               [&] { return resample->set_mode(to_cudnn(window_.mode)); },
               [&] { return resample->set_compute_type(CUDNN_DATA_FLOAT); },
               [&] { return resample->set_nan_propagation(CUDNN_PROPAGATE_NAN); },
               [&] { return resample->set_padding_mode(padding_mode(window_.mode)); },
               [&] { return resample->set_window_dims(window); },
               [&] { return resample->set_pre_paddings(pre); },
               [&] { return resample->set_post_paddings(post); },
               [&] { return resample->set_strides(stride); }, [&] { return resample->finalize(); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return resample;
}

namespace {

std::vector<TensorPtr> forward_outputs(TensorPtr y, TensorPtr index) {
  std::vector<TensorPtr> out{std::move(y)};
  if (index) {
    out.push_back(std::move(index));
  }
  return out;
}

}  // namespace

ResampleNode::ResampleNode(const ResampleAttributes& attributes, TensorPtr x, TensorPtr y,
                           TensorPtr index)
    : ResampleNodeBase(attributes.name(), ResampleSettings::of(attributes), {std::move(x)},
                       forward_outputs(std::move(y), index)),
      index_(std::move(index)) {}

Result<void> ResampleNode::settle_index(const TensorAttributes& y, const GraphContext& context) {
  TensorAttributes& index = *index_;
  if (window().mode != ResampleMode::MaxPool) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": set_generate_index(true) with mode " +
                          std::string(to_string(window().mode)) +
                          "; only MaxPool has an index (average pooling's backward needs none)");
  }
  // Y's layout and Int8, unless the user set them.
  if (index.stride().empty() && (index.dim().empty() || index.dim() == y.dim())) {
    index.set_stride(y.stride());
  }
  if (!index.data_type()) {
    index.set_data_type(DataType::Int8);
  }
  if (auto ok = settle_output(index, y.dim(), context); !ok) {
    return ok;
  }
  return check_index(index);
}

Result<void> ResampleNode::infer(const GraphContext& context) {
  const TensorAttributes& x = *inputs()[0];
  // A virtual X is another node's result inside this graph (a ReLU before the pooling, say):
  // cuDNN returns success and leaves Y unwritten (known issue resample-after-pointwise-unwritten).
  if (x.is_virtual()) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": X " + x.describe() +
                          " is another node's result inside this graph; cuDNN returns success "
                          "without writing Y for a pooling fused behind another operation (known "
                          "issue resample-after-pointwise-unwritten): make X an output "
                          "(set_output(true)) and pool it in a graph of its own");
  }
  if (auto ok = settle_window("X", x, context); !ok) {
    return ok;
  }
  auto y_dims = pooled_dims("X", x, x.dim());
  if (!y_dims) {
    return std::unexpected(y_dims.error());
  }
  TensorAttributes& y = *outputs()[0];
  follow_layout(y, *y_dims, x);
  if (auto ok = settle_output(y, *y_dims, context); !ok) {
    return ok;
  }
  if (auto ok = check_pooling_type("Y", y); !ok) {
    return ok;
  }
  return index_ ? settle_index(y, context) : Result<void>{};
}

Result<LoweredOperation> ResampleNode::lower(const TensorTable& tensors,
                                             const GraphContext& /*context*/) const {
  using Op = backend::OperationResampleForward;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 3> roles{{
      {&inputs()[0], &Op::set_x},
      {&outputs()[0], &Op::set_y},
      {&index_, &Op::set_index},
  }};
  return lower_resample<Op>(roles, tensors);
}

}  // namespace dnngraph::detail
