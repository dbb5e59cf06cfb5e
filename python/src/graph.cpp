// dnngraph.Graph: the C++ Graph with keyword arguments for its options and node attributes.
// build(), execute() and get_workspace_size() with a handle run without the GIL; a per-graph
// mutex keeps two Python threads from using one Graph at the same time (it is taken without
// holding the GIL while waiting, so a thread building with the GIL released can finish).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"
#include "buffers.hpp"
#include "errors.hpp"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace dnngraph::python {

namespace {

using Tensor = std::shared_ptr<TensorAttributes>;
using Dims = std::vector<std::int64_t>;
// A node operand: a tensor of the graph, or a number that becomes a Float scalar by value.
using Operand = std::variant<Tensor, double>;

// What the last successful build's execute() takes: each uid's buffer layout and the plan's
// workspace bytes.
struct BuiltLayouts {
  std::vector<BufferLayout> layouts;
  std::int64_t workspace = -1;
};

struct PyGraph {
  Graph graph;
  std::mutex mutex;  // guards graph and built: held by whichever Python thread is using them
  // Replaced, under the mutex, by the call that built (never changed in place). A call that
  // checks buffers outside the lock holds a copy of the pointer: the layouts it reads stay
  // alive, and once locked it can tell whether another thread built meanwhile.
  std::shared_ptr<const BuiltLayouts> built;  // guarded by mutex
};

// Locks g's mutex; while another thread holds it, waits with the GIL released.
std::unique_lock<std::mutex> lock(PyGraph& g) {
  std::unique_lock<std::mutex> locked(g.mutex, std::try_to_lock);
  if (!locked.owns_lock()) {
    nb::gil_scoped_release release;
    locked.lock();
  }
  return locked;
}

// Runs call(graph) with the GIL released and the graph locked (the lock is dropped before the
// GIL is taken back), then unwraps its Result.
template <class F>
auto run_unlocked(PyGraph& g, F&& call) {
  auto result = [&] {
    nb::gil_scoped_release release;
    const std::scoped_lock locked(g.mutex);
    return call(g.graph);
  }();
  return unwrap(std::move(result));
}

// run_unlocked for a call that builds (build, deserialize, build_plan_at, autotune): on success
// the layouts execute() checks buffers against are replaced in the same locked section, so no
// execute runs the new plan with the old layouts.
template <class F>
auto build_unlocked(PyGraph& g, F&& call) {
  return run_unlocked(g, [&](Graph& gr) {
    auto result = call(gr);
    if (result) {
      auto workspace = gr.get_workspace_size();
      g.built = std::make_shared<const BuiltLayouts>(
          BuiltLayouts{buffer_layouts(gr), workspace ? *workspace : -1});
    }
    return result;
  });
}

// The layouts of the last build, read under the lock (empty before any build).
std::shared_ptr<const BuiltLayouts> built_layouts(PyGraph& g) {
  static const auto none = std::make_shared<const BuiltLayouts>();
  const auto locked = lock(g);
  return g.built ? g.built : none;
}

// Inside the locked call: whether the buffers were checked against the current build.
Result<void> still_built(const PyGraph& g, const std::shared_ptr<const BuiltLayouts>& checked,
                         const char* call) {
  if (g.built != nullptr && g.built != checked) {
    return std::unexpected(Error{ErrorCode::InvalidState,
                                 std::string(call) +
                                     ": the graph was built again (on another thread) while this "
                                     "call checked its buffers; call it again"});
  }
  return {};
}

// A statistic a norm gives only in some phases: None in Python where the graph made none.
std::optional<Tensor> present(const Tensor& t) {
  return t ? std::optional<Tensor>(t) : std::nullopt;
}

Tensor operand(PyGraph& g, const Operand& o) {
  if (const auto* t = std::get_if<Tensor>(&o)) {
    return *t;
  }
  return g.graph.tensor(static_cast<float>(std::get<double>(o)));
}

template <class A>
A& named(A& attributes, const std::optional<std::string>& name,
         const std::optional<DataType>& compute) {
  if (name) {
    attributes.set_name(*name);
  }
  if (compute) {
    attributes.set_compute_data_type(*compute);
  }
  return attributes;
}

// The keyword arguments sdpa() and sdpa_backward() share.
struct AttentionArgs {
  std::optional<float> scale;
  bool causal, causal_bottom_right, padding;
  const std::optional<Tensor>& seq_len_q;
  const std::optional<Tensor>& seq_len_kv;
  std::optional<DataType> compute;
  const std::optional<std::string>& name;
  // dropout= (the probability), seed=, offset=, dropout_mask_output=
  std::optional<double> dropout;
  const std::optional<Tensor>& seed;
  const std::optional<Tensor>& offset;
  bool dropout_mask_output;
};

// The scale and masks every attention node takes (sdpa, sdpa_backward, sdpa_fp8).
template <class A>
A& attention_score_attributes(A& a, const AttentionArgs& args) {
  named(a, args.name, args.compute);
  if (args.scale) a.set_attn_scale(*args.scale);
  a.set_padding_mask(args.padding);
  if (args.causal) a.set_causal_mask(true);
  if (args.causal_bottom_right) a.set_causal_mask_bottom_right(true);
  if (args.seq_len_q) a.set_seq_len_q(*args.seq_len_q);
  if (args.seq_len_kv) a.set_seq_len_kv(*args.seq_len_kv);
  return a;
}

template <class A>
A& attention_attributes(A& a, const AttentionArgs& args) {
  attention_score_attributes(a, args);
  if (args.dropout) {
    a.set_dropout(*args.dropout, args.seed.value_or(nullptr), args.offset.value_or(nullptr));
  }
  a.set_dropout_mask_output(args.dropout_mask_output);
  return a;
}

// A further output of an attention node, found from another of its outputs (dropout_mask, dbias).
template <auto Find>
std::optional<Tensor> output_of_node(PyGraph& g, const Tensor& output) {
  const auto locked = lock(g);
  return present((g.graph.*Find)(output));
}

// bias=, sliding_window_length= and alibi_slopes= (which turns ALiBi on) of sdpa() and
// sdpa_backward().
template <class A>
A& score_modifiers(A& a, const std::optional<Tensor>& bias, std::optional<std::int64_t> window,
                   const std::optional<Tensor>& alibi_slopes) {
  if (bias) a.set_bias(*bias);
  if (window) a.set_sliding_window_length(*window);
  if (alibi_slopes) a.set_alibi_mask(true).set_alibi_slopes(*alibi_slopes);
  return a;
}

struct ConvArgs {
  std::optional<Dims> padding, pre_padding, post_padding, stride, dilation;
  std::optional<ConvolutionMode> mode;
  std::optional<std::int64_t> groups;
  std::optional<DataType> compute;
  std::optional<std::string> name;
};

template <class A>
A conv_attributes(const ConvArgs& c) {
  A a;
  named(a, c.name, c.compute);
  if (c.padding) a.set_padding(*c.padding);
  if (c.pre_padding) a.set_pre_padding(*c.pre_padding);
  if (c.post_padding) a.set_post_padding(*c.post_padding);
  if (c.stride) a.set_stride(*c.stride);
  if (c.dilation) a.set_dilation(*c.dilation);
  if (c.mode) a.set_convolution_mode(*c.mode);
  if (c.groups) a.set_group_count(*c.groups);
  return a;
}

// One convolution node kind: (graph, first input, second input, geometry) -> output.
template <class A, Tensor (Graph::*node)(const Tensor&, const Tensor&, A)>
void def_conv(nb::class_<PyGraph>& cls, const char* name, const char* first, const char* second,
              const char* doc) {
  cls.def(
      name,
      [](PyGraph& g, const Tensor& x, const Tensor& w, std::optional<Dims> padding,
         std::optional<Dims> pre_padding, std::optional<Dims> post_padding,
         std::optional<Dims> stride, std::optional<Dims> dilation,
         std::optional<ConvolutionMode> mode, std::optional<std::int64_t> groups,
         std::optional<DataType> compute, const std::optional<std::string>& node_name) {
        const auto locked = lock(g);
        const ConvArgs args{std::move(padding),
                            std::move(pre_padding),
                            std::move(post_padding),
                            std::move(stride),
                            std::move(dilation),
                            mode,
                            groups,
                            compute,
                            node_name};
        return (g.graph.*node)(x, w, conv_attributes<A>(args));
      },
      nb::arg(first), nb::arg(second), nb::kw_only(), "padding"_a = nb::none(),
      "pre_padding"_a = nb::none(), "post_padding"_a = nb::none(), "stride"_a = nb::none(),
      "dilation"_a = nb::none(), "convolution_mode"_a = nb::none(), "group_count"_a = nb::none(),
      "compute_data_type"_a = nb::none(), "name"_a = nb::none(), doc);
}

// The binding of a forward norm taking (X, scale, bias, phase, epsilon) and returning (Y, mean,
// inv_variance), the statistics None in Inference: layernorm, instancenorm, adalayernorm.
template <class Attributes, auto node>
auto mean_norm() {
  return [](PyGraph& g, const Tensor& x, const Tensor& scale, const Tensor& bias,
            NormFwdPhase phase, const Operand& epsilon, std::optional<DataType> compute,
            const std::optional<std::string>& name) {
    const auto locked = lock(g);
    Attributes attributes;
    attributes.set_forward_phase(phase).set_epsilon(operand(g, epsilon));
    const auto [y, mean, inv_variance] =
        (g.graph.*node)(x, scale, bias, named(attributes, name, compute));
    return std::make_tuple(y, present(mean), present(inv_variance));
  };
}

// The attributes of resample() or resample_backward() from the keyword arguments they share.
template <class A>
A resample_attributes(ResampleMode mode, Dims window, Dims stride, std::optional<Dims> padding,
                      std::optional<Dims> pre_padding, std::optional<Dims> post_padding,
                      std::optional<DataType> compute, const std::optional<std::string>& name) {
  A a;
  named(a, name, compute);
  a.set_mode(mode).set_window(std::move(window)).set_stride(std::move(stride));
  if (padding) a.set_padding(std::move(*padding));
  if (pre_padding) a.set_pre_padding(std::move(*pre_padding));
  if (post_padding) a.set_post_padding(std::move(*post_padding));
  return a;
}

// The binding of a backward node taking (dY, X, scale, mean, inv_variance) and returning
// (dX, dScale, dBias): layernorm_backward, batchnorm_backward, instancenorm_backward,
// adalayernorm_backward.
template <auto node>
auto mean_norm_backward() {
  return [](PyGraph& g, const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& mean,
            const Tensor& inv_variance, std::optional<DataType> compute,
            const std::optional<std::string>& name) {
    const auto locked = lock(g);
    NormBackwardAttributes attributes;
    const auto [dx, dscale, dbias] =
        (g.graph.*node)(dy, x, scale, mean, inv_variance, named(attributes, name, compute));
    return std::make_tuple(dx, dscale, dbias);
  };
}

// Graph.<name>(value) -> the graph itself, for chainable setters of the C++ Graph taking an Arg.
template <class Arg, class ArgName>
void def_setters(nb::class_<PyGraph>& cls, const ArgName& arg,
                 std::initializer_list<std::pair<const char*, Graph& (Graph::*)(Arg)>> setters) {
  for (const auto& [name, setter] : setters) {
    cls.def(
        name,
        [setter](PyGraph& g, Arg value) -> PyGraph& {
          const auto locked = lock(g);
          (g.graph.*setter)(std::move(value));
          return g;
        },
        arg, nb::rv_policy::reference);
  }
}

void def_options(nb::class_<PyGraph>& cls) {
  cls.def(
      "__init__",
      [](PyGraph* g, std::optional<DataType> io, std::optional<DataType> compute,
         std::optional<DataType> intermediate, bool dynamic_shape,
         std::shared_ptr<KernelCache> kernel_cache, bool override_shape,
         bool cache_first_plan_choice, std::string name) {
        new (g) PyGraph();
        Graph& graph = g->graph;
        if (io) graph.set_io_data_type(*io);
        if (compute) graph.set_compute_data_type(*compute);
        if (intermediate) graph.set_intermediate_data_type(*intermediate);
        graph.set_dynamic_shape_enabled(dynamic_shape)
            .set_override_shape_enabled(override_shape)
            .set_cache_first_plan_choice(cache_first_plan_choice)
            .set_name(std::move(name));
        if (kernel_cache) graph.set_kernel_cache(std::move(kernel_cache));
      },
      nb::kw_only(), "io_data_type"_a = nb::none(), "compute_data_type"_a = nb::none(),
      "intermediate_data_type"_a = nb::none(), "dynamic_shape"_a = false,
      "kernel_cache"_a = nb::none(), "override_shape"_a = false, "cache_first_plan_choice"_a = true,
      "name"_a = "",
      "A graph with its options (each also has a set_* method). dynamic_shape marks the\n"
      "operation graph dynamic, which a kernel_cache needs; override_shape builds once and\n"
      "takes each run's shapes at execute().");
  def_setters<std::string>(cls, nb::arg("name"), {{"set_name", &Graph::set_name}});
  def_setters<DataType>(cls, nb::arg("data_type"),
                        {{"set_io_data_type", &Graph::set_io_data_type},
                         {"set_intermediate_data_type", &Graph::set_intermediate_data_type},
                         {"set_compute_data_type", &Graph::set_compute_data_type}});
  def_setters<bool>(cls, nb::arg("enabled"),
                    {{"set_dynamic_shape_enabled", &Graph::set_dynamic_shape_enabled},
                     {"set_cache_first_plan_choice", &Graph::set_cache_first_plan_choice},
                     {"set_override_shape_enabled", &Graph::set_override_shape_enabled}});
  def_setters<std::shared_ptr<KernelCache>>(cls, nb::arg("kernel_cache").none(),
                                            {{"set_kernel_cache", &Graph::set_kernel_cache}});
}

void def_nodes(nb::class_<PyGraph>& cls) {
  cls.def(
         "tensor",
         [](PyGraph& g, std::optional<std::string> name, std::optional<std::int64_t> uid,
            std::optional<Dims> dim, std::optional<Dims> stride, std::optional<DataType> data_type,
            std::optional<bool> is_virtual, std::optional<float> value) {
           const auto locked = lock(g);
           const bool scalar_only =
               value && !name && !uid && !dim && !stride && !data_type && !is_virtual;
           if (scalar_only) {
             return g.graph.tensor(*value);
           }
           TensorAttributes t;
           if (name) t.set_name(std::move(*name));
           if (uid) t.set_uid(*uid);
           if (dim) t.set_dim(std::move(*dim));
           if (stride) t.set_stride(std::move(*stride));
           if (data_type) t.set_data_type(*data_type);
           if (is_virtual) t.set_is_virtual(*is_virtual);
           if (value) t.set_value(*value);
           return g.graph.tensor(t);
         },
         nb::kw_only(), "name"_a = nb::none(), "uid"_a = nb::none(), "dim"_a = nb::none(),
         "stride"_a = nb::none(), "data_type"_a = nb::none(), "is_virtual"_a = nb::none(),
         "value"_a = nb::none(),
         "Adds a graph input. Strides default to packed; the data type to the graph's\n"
         "io_data_type. value=x alone makes a Float scalar passed by value.")
      .def(
          "matmul",
          [](PyGraph& g, const Tensor& a, const Tensor& b, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            MatmulAttributes attributes;
            return g.graph.matmul(a, b, named(attributes, name, compute));
          },
          "a"_a, "b"_a, nb::kw_only(), "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "C = A x B ([batch, M, K] x [batch, K, N]; FP8 inputs too). C is virtual until\n"
          "set_output(True).")
      .def(
          "pointwise",
          [](PyGraph& g, const Tensor& x, std::optional<Operand> b, std::optional<Operand> t,
             PointwiseMode mode, std::optional<double> swish_beta, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            PointwiseAttributes attributes;
            attributes.set_mode(mode);
            if (swish_beta) attributes.set_swish_beta(*swish_beta);
            named(attributes, name, compute);
            if (!b) {
              return t ? g.graph.pointwise(x, nullptr, operand(g, *t), attributes)
                       : g.graph.pointwise(x, attributes);
            }
            const Tensor second = operand(g, *b);
            return t ? g.graph.pointwise(x, second, operand(g, *t), attributes)
                     : g.graph.pointwise(x, second, attributes);
          },
          "x"_a, "b"_a = nb::none(), "t"_a = nb::none(), nb::kw_only(), "mode"_a,
          "swish_beta"_a = nb::none(), "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Y = mode(X), mode(X, B) or mode(X, B, T) (BinarySelect: T ? X : B), broadcasting\n"
          "size-1 dims. B and T may be numbers (Float scalars by value). For the *Bwd modes X is\n"
          "dY, B is X and Y is dX.");
  def_conv<ConvFpropAttributes, &Graph::conv_fprop>(
      cls, "conv_fprop", "x", "w",
      "Y [N, K, out...] = conv(X [N, C, spatial...], W [K, C / groups, filter...]). Lists give\n"
      "one value per spatial dim (padding 0, stride 1, dilation 1 unless set); group_count\n"
      "splits C and K into groups (depthwise: group_count = C).");
  def_conv<ConvDgradAttributes, &Graph::conv_dgrad>(
      cls, "conv_dgrad", "dy", "w", "dX [N, C, spatial...] from dY and W of the forward conv.");
  def_conv<ConvWgradAttributes, &Graph::conv_wgrad>(
      cls, "conv_wgrad", "x", "dy",
      "dW [K, C / groups, filter...] from X and dY; set dW's dims on the returned tensor.");
  cls.def(
         "reduction",
         [](PyGraph& g, const Tensor& x, ReductionMode mode, std::optional<DataType> compute,
            const std::optional<std::string>& name) {
           const auto locked = lock(g);
           ReductionAttributes attributes;
           attributes.set_mode(mode);
           return g.graph.reduction(x, named(attributes, name, compute));
         },
         "x"_a, nb::kw_only(), "mode"_a, "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
         "Y = mode(X) over the dims where Y has extent 1: set Y's dims on the returned tensor.")
      .def(
          "rng",
          [](PyGraph& g, const Tensor& seed, const Tensor& offset, double bernoulli_probability,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            RngAttributes attributes;
            attributes.set_bernoulli_probability(bernoulli_probability);
            return g.graph.rng(seed, offset, named(attributes, name, std::nullopt));
          },
          "seed"_a, "offset"_a, nb::kw_only(), "bernoulli_probability"_a, "name"_a = nb::none(),
          "Y drawn from a Bernoulli distribution (1 with bernoulli_probability) by cuDNN's\n"
          "Philox generator keyed by seed and offset (one Int64 or Int32 value each, in device\n"
          "memory): set Y's dims on the returned tensor. The same key gives the same Y.")
      .def(
          "resample",
          [](PyGraph& g, const Tensor& x, ResampleMode mode, Dims window, Dims stride,
             std::optional<Dims> padding, std::optional<Dims> pre_padding,
             std::optional<Dims> post_padding, bool generate_index, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            auto attributes = resample_attributes<ResampleAttributes>(
                mode, std::move(window), std::move(stride), std::move(padding),
                std::move(pre_padding), std::move(post_padding), compute, name);
            attributes.set_generate_index(generate_index);
            const auto [y, index] = g.graph.resample(x, attributes);
            return std::make_tuple(y, present(index));
          },
          "x"_a, nb::kw_only(), "mode"_a, "window"_a, "stride"_a, "padding"_a = nb::none(),
          "pre_padding"_a = nb::none(), "post_padding"_a = nb::none(), "generate_index"_a = false,
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Pooling over X [N, C, spatial...] (2 or 3 spatial dims): Y [N, C, out...], out =\n"
          "floor((in + pre + post - window) / stride) + 1, in X's layout. Returns (Y, Index);\n"
          "Index (Int8, Y's dims: where each maximum was in its window) only with MaxPool and\n"
          "generate_index=True, else None.")
      .def(
          "resample_backward",
          [](PyGraph& g, const Tensor& dy, ResampleMode mode, Dims window, Dims stride,
             std::optional<Dims> padding, std::optional<Dims> pre_padding,
             std::optional<Dims> post_padding, const std::optional<Tensor>& x,
             const std::optional<Tensor>& y, const std::optional<Tensor>& index,
             std::optional<DataType> compute, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            auto attributes = resample_attributes<ResampleBackwardAttributes>(
                mode, std::move(window), std::move(stride), std::move(padding),
                std::move(pre_padding), std::move(post_padding), compute, name);
            if (x) attributes.set_x(*x);
            if (y) attributes.set_y(*y);
            if (index) attributes.set_index(*index);
            return g.graph.resample_backward(dy, attributes);
          },
          "dy"_a, nb::kw_only(), "mode"_a, "window"_a, "stride"_a, "padding"_a = nb::none(),
          "pre_padding"_a = nb::none(), "post_padding"_a = nb::none(), "x"_a = nb::none(),
          "y"_a = nb::none(), "index"_a = nb::none(), "compute_data_type"_a = nb::none(),
          "name"_a = nb::none(),
          "dX from dY with the forward's mode, window, stride and padding. MaxPool needs the\n"
          "forward's index, or its x and y. dX has x's dims; without x, set dX's dims on the\n"
          "returned tensor.")
      .def(
          "reshape",
          [](PyGraph& g, const Tensor& x, std::optional<Dims> permutation,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            ReshapeAttributes attributes;
            if (permutation) attributes.set_permutation(std::move(*permutation));
            return g.graph.reshape(x, named(attributes, name, std::nullopt));
          },
          "x"_a, nb::kw_only(), "permutation"_a = nb::none(), "name"_a = nb::none(),
          "Y = X under other dims and strides, a view of X's memory: set Y's dims on the\n"
          "returned tensor (X's element count), or permutation= for a transpose (Y's dims and\n"
          "strides are X's in that order). Y's data type, unless set, is X's.")
      .def(
          "concatenate",
          [](PyGraph& g, const std::vector<Tensor>& inputs, std::int64_t axis,
             std::optional<std::int64_t> in_place_index, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            ConcatenateAttributes attributes;
            attributes.set_axis(axis);
            if (in_place_index) attributes.set_in_place_index(*in_place_index);
            return g.graph.concatenate(inputs, named(attributes, name, std::nullopt));
          },
          "inputs"_a, nb::kw_only(), "axis"_a, "in_place_index"_a = nb::none(),
          "name"_a = nb::none(),
          "Y = the inputs one after another along axis (same rank, dims and data type but along\n"
          "the axis). in_place_index=k: input k already lies in Y's buffer at its place (Y's\n"
          "strides). Needs cuDNN >= 9.7 at build.")
      .def(
          "slice",
          [](PyGraph& g, const Tensor& x, std::vector<std::pair<std::int64_t, std::int64_t>> slices,
             std::optional<Dims> strides, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            SliceAttributes attributes;
            attributes.set_slices(std::move(slices));
            if (strides) attributes.set_strides(std::move(*strides));
            return g.graph.slice(x, named(attributes, name, std::nullopt));
          },
          "x"_a, nb::kw_only(), "slices"_a, "strides"_a = nb::none(), "name"_a = nb::none(),
          "Y = X[start:limit:stride] in each dim: slices=[(start, limit), ...], one pair per dim\n"
          "of X; strides= the steps (1 unless given). Needs cuDNN >= 9.22 at build.")
      .def("layernorm", mean_norm<LayernormAttributes, &Graph::layernorm>(), "x"_a, "scale"_a,
           "bias"_a, nb::kw_only(), "phase"_a, "epsilon"_a, "compute_data_type"_a = nb::none(),
           "name"_a = nb::none(),
           "Layer normalization over every dim but the first. Returns (Y, mean, inv_variance);\n"
           "the statistics are None in the Inference phase. epsilon: a number or a tensor.")
      .def(
          "genstats",
          [](PyGraph& g, const Tensor& x, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            GenstatsAttributes attributes;
            const auto [sum, sq_sum] = g.graph.genstats(x, named(attributes, name, compute));
            return std::make_tuple(sum, sq_sum);
          },
          "x"_a, nb::kw_only(), "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Per-channel statistics of X [N, C, (D,) H, W]: (sum, sq_sum), [1, C, 1, ...] Float.\n"
          "Behind a convolution cuDNN computes them in the convolution's pass.")
      .def(
          "bn_finalize",
          [](PyGraph& g, const Tensor& sum, const Tensor& sq_sum, const Tensor& scale,
             const Tensor& bias, const Tensor& prev_running_mean, const Tensor& prev_running_var,
             float epsilon, float momentum, std::int64_t accumulation_count,
             std::optional<DataType> compute, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            BnFinalizeAttributes attributes;
            attributes.set_epsilon(g.graph.tensor(epsilon))
                .set_accumulation_count(g.graph.int64_scalar(accumulation_count))
                .set_previous_running_stats(prev_running_mean, prev_running_var,
                                            g.graph.tensor(momentum));
            const auto outs =
                g.graph.bn_finalize(sum, sq_sum, scale, bias, named(attributes, name, compute));
            return std::make_tuple(outs[0], outs[1], outs[2], outs[3], outs[4], outs[5]);
          },
          "sum"_a, "sq_sum"_a, "scale"_a, "bias"_a, nb::kw_only(), "prev_running_mean"_a,
          "prev_running_var"_a, "epsilon"_a, "momentum"_a, "accumulation_count"_a,
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "A batch norm finalized from genstats' sums of accumulation_count (N * H * W) values\n"
          "per channel. Returns (eq_scale, eq_bias, mean, inv_variance, next_running_mean,\n"
          "next_running_var); epsilon, momentum and the count are passed by value.")
      .def(
          "dbn_weight",
          [](PyGraph& g, const Tensor& dy, const Tensor& x, const Tensor& mean,
             const Tensor& inv_variance, const Tensor& scale, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            DbnWeightAttributes attributes;
            const auto outs = g.graph.dbn_weight(dy, x, mean, inv_variance, scale,
                                                 named(attributes, name, compute));
            return std::make_tuple(outs[0], outs[1], outs[2], outs[3], outs[4]);
          },
          "dy"_a, "x"_a, "mean"_a, "inv_variance"_a, "scale"_a, nb::kw_only(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "The weight half of a batch norm's backward split over X [N, C, (D,) H, W]\n"
          "(channels-last). Returns (dScale, dBias, eq_scale_dy, eq_scale_x, eq_bias), each\n"
          "[1, C, 1, ...] Float: dX = eq_scale_dy * dY + eq_scale_x * X + eq_bias.")
      .def("instancenorm", mean_norm<InstancenormAttributes, &Graph::instancenorm>(), "x"_a,
           "scale"_a, "bias"_a, nb::kw_only(), "phase"_a, "epsilon"_a,
           "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
           "Instance normalization of X [N, C, (D,) H, W] per sample and channel (channels-last).\n"
           "Returns (Y, mean, inv_variance); the statistics ([N, C, 1, ...] Float) are None in\n"
           "the Inference phase. epsilon: a number or a tensor.")
      .def(
          "adalayernorm", mean_norm<AdaLayernormAttributes, &Graph::adalayernorm>(), "x"_a,
          "scale"_a, "bias"_a, nb::kw_only(), "phase"_a, "epsilon"_a,
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Adaptive layer normalization of X [B, S, D...] (cuDNN >= 9.9): scale and bias per\n"
          "sample ([B, 1, D...]). Returns (Y, mean, inv_variance); the statistics ([B, S, 1, ...]\n"
          "Float) are None in the Inference phase. epsilon: a number or a tensor.")
      .def(
          "rmsnorm",
          [](PyGraph& g, const Tensor& x, const Tensor& scale, NormFwdPhase phase,
             const Operand& epsilon, std::optional<Tensor> bias, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            RmsnormAttributes attributes;
            attributes.set_forward_phase(phase).set_epsilon(operand(g, epsilon));
            if (bias) attributes.set_bias(*bias);
            const auto [y, inv_variance] =
                g.graph.rmsnorm(x, scale, named(attributes, name, compute));
            return std::make_tuple(y, present(inv_variance));
          },
          "x"_a, "scale"_a, nb::kw_only(), "phase"_a, "epsilon"_a, "bias"_a = nb::none(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "RMS normalization. Returns (Y, inv_variance); inv_variance is None in Inference.")
      .def("layernorm_backward", mean_norm_backward<&Graph::layernorm_backward>(), "dy"_a, "x"_a,
           "scale"_a, "mean"_a, "inv_variance"_a, nb::kw_only(), "compute_data_type"_a = nb::none(),
           "name"_a = nb::none(),
           "Layer normalization backward from the forward's saved statistics. Returns\n"
           "(dX, dScale, dBias): dX like X, the parameter gradients like the scale in Float.")
      .def(
          "rmsnorm_backward",
          [](PyGraph& g, const Tensor& dy, const Tensor& x, const Tensor& scale,
             const Tensor& inv_variance, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            NormBackwardAttributes attributes;
            const auto [dx, dscale] = g.graph.rmsnorm_backward(dy, x, scale, inv_variance,
                                                               named(attributes, name, compute));
            return std::make_tuple(dx, dscale);
          },
          "dy"_a, "x"_a, "scale"_a, "inv_variance"_a, nb::kw_only(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "RMS normalization backward from the saved inverse RMS. Returns (dX, dScale).")
      .def(
          "batchnorm",
          [](PyGraph& g, const Tensor& x, const Tensor& scale, const Tensor& bias,
             const Operand& epsilon, const std::optional<Tensor>& prev_running_mean,
             const std::optional<Tensor>& prev_running_var, std::optional<Operand> momentum,
             std::optional<DataType> compute, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            BatchnormAttributes attributes;
            attributes.set_epsilon(operand(g, epsilon));
            if (prev_running_mean || prev_running_var || momentum) {
              attributes.set_previous_running_stats(prev_running_mean.value_or(nullptr),
                                                    prev_running_var.value_or(nullptr),
                                                    momentum ? operand(g, *momentum) : nullptr);
            }
            const auto [y, mean, inv_variance, next_mean, next_var] =
                g.graph.batchnorm(x, scale, bias, named(attributes, name, compute));
            return std::make_tuple(y, mean, inv_variance, present(next_mean), present(next_var));
          },
          "x"_a, "scale"_a, "bias"_a, nb::kw_only(), "epsilon"_a,
          "prev_running_mean"_a = nb::none(), "prev_running_var"_a = nb::none(),
          "momentum"_a = nb::none(), "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Batch normalization in training over X [N, C, (D,) H, W] (channels-last). Returns\n"
          "(Y, mean, inv_variance, next_running_mean, next_running_var): the saved per-channel\n"
          "statistics and, given the previous running statistics and momentum (a number or a\n"
          "tensor), the updated ones (else None).")
      .def("batchnorm_backward", mean_norm_backward<&Graph::batchnorm_backward>(), "dy"_a, "x"_a,
           "scale"_a, "mean"_a, "inv_variance"_a, nb::kw_only(), "compute_data_type"_a = nb::none(),
           "name"_a = nb::none(),
           "Batch normalization backward from batchnorm's saved per-channel statistics. Returns\n"
           "(dX, dScale, dBias).")
      .def("instancenorm_backward", mean_norm_backward<&Graph::instancenorm_backward>(), "dy"_a,
           "x"_a, "scale"_a, "mean"_a, "inv_variance"_a, nb::kw_only(),
           "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
           "Instance normalization backward from instancenorm's saved statistics. Returns\n"
           "(dX, dScale, dBias).")
      .def("adalayernorm_backward", mean_norm_backward<&Graph::adalayernorm_backward>(), "dy"_a,
           "x"_a, "scale"_a, "mean"_a, "inv_variance"_a, nb::kw_only(),
           "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
           "Adaptive layer normalization backward from adalayernorm's saved statistics. Returns\n"
           "(dX, dScale, dBias); the parameter gradients per sample like the scale, in Float.")
      .def(
          "batchnorm_inference",
          [](PyGraph& g, const Tensor& x, const Tensor& mean, const Tensor& inv_variance,
             const Tensor& scale, const Tensor& bias, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            BatchnormInferenceAttributes attributes;
            return g.graph.batchnorm_inference(x, mean, inv_variance, scale, bias,
                                               named(attributes, name, compute));
          },
          "x"_a, "mean"_a, "inv_variance"_a, "scale"_a, "bias"_a, nb::kw_only(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Y = (X - mean) * inv_variance * scale + bias with per-channel [1, C, 1, 1]\n"
          "parameters; four pointwise nodes, so it fuses after a convolution.")
      .def(
          "sdpa",
          [](PyGraph& g, const Tensor& q, const Tensor& k, const Tensor& v,
             std::optional<float> attn_scale, bool generate_stats, bool causal_mask,
             bool causal_mask_bottom_right, bool padding_mask,
             const std::optional<Tensor>& seq_len_q, const std::optional<Tensor>& seq_len_kv,
             std::optional<double> dropout, const std::optional<Tensor>& seed,
             const std::optional<Tensor>& offset, bool dropout_mask_output,
             const std::optional<Tensor>& page_table_k, const std::optional<Tensor>& page_table_v,
             std::optional<std::int64_t> max_seq_len_kv, const std::optional<Tensor>& bias,
             std::optional<std::int64_t> sliding_window_length,
             const std::optional<Tensor>& alibi_slopes, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            SdpaAttributes attributes;
            score_modifiers(attributes, bias, sliding_window_length, alibi_slopes)
                .set_generate_stats(generate_stats);
            // Any of the three makes the cache paged; validate() names what is missing.
            if (page_table_k || page_table_v || max_seq_len_kv) {
              attributes.set_paged_attention(page_table_k.value_or(nullptr),
                                             page_table_v.value_or(nullptr),
                                             max_seq_len_kv.value_or(0));
            }
            const AttentionArgs args{attn_scale,   causal_mask, causal_mask_bottom_right,
                                     padding_mask, seq_len_q,   seq_len_kv,
                                     compute,      name,        dropout,
                                     seed,         offset,      dropout_mask_output};
            const auto [o, stats] = g.graph.sdpa(q, k, v, attention_attributes(attributes, args));
            return std::make_tuple(o, present(stats));
          },
          "q"_a, "k"_a, "v"_a, nb::kw_only(), "attn_scale"_a = nb::none(),
          "generate_stats"_a = false, "causal_mask"_a = false, "causal_mask_bottom_right"_a = false,
          "padding_mask"_a = false, "seq_len_q"_a = nb::none(), "seq_len_kv"_a = nb::none(),
          "dropout"_a = nb::none(), "seed"_a = nb::none(), "offset"_a = nb::none(),
          "dropout_mask_output"_a = false, "page_table_k"_a = nb::none(),
          "page_table_v"_a = nb::none(), "max_seq_len_kv"_a = nb::none(), "bias"_a = nb::none(),
          "sliding_window_length"_a = nb::none(), "alibi_slopes"_a = nb::none(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "Scaled dot-product attention O = softmax(attn_scale * Q K^T + masks) V for Q\n"
          "[b, h_q, s_q, d], K [b, h_k, s_kv, d], V [b, h_v, s_kv, d_v] (Half or BFloat16,\n"
          "h_k and h_v dividing h_q). Returns (O, Stats); Stats (Float [b, h_q, s_q, 1], the\n"
          "log-sum-exp per row) only with generate_stats=True, else None. attn_scale unset is 1.\n"
          "causal_mask: top-left diagonal; causal_mask_bottom_right: the last query sees every\n"
          "key. padding_mask needs seq_len_q and seq_len_kv (Int32 [b, 1, 1, 1]).\n"
          "dropout=p in [0, 1) with seed= and offset= (one Int64 or Int32 value each, in device\n"
          "memory) drops each probability with p before P V (Stats are not dropped);\n"
          "dropout_mask_output=True also writes the mask: dropout_mask(O) gives it.\n"
          "page_table_k=, page_table_v= (Int32 [b, 1, pages, 1]) and max_seq_len_kv= read K\n"
          "and V from a paged cache: k and v are then containers [num_blocks, h, block_size,\n"
          "d], each page table holds ceil(max_seq_len_kv / block_size) block indices per\n"
          "batch, and padding_mask=True with seq_len_kv gives each batch's length.\n"
          "bias= ([b or 1, h_q or 1, s_q, s_kv] in Q's type) is added to the scaled scores\n"
          "before the masks; sliding_window_length=W (with causal_mask=True) keeps key j for\n"
          "query i only when i - W < j; alibi_slopes= (Float [1, h_q, 1, 1] holding\n"
          "alibi_slopes(h_q), with causal_mask=True) adds slope_h * (j - i).")
      .def(
          "sdpa_fp8",
          [](PyGraph& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& descale_q,
             const Tensor& descale_k, const Tensor& descale_v, const Tensor& descale_s,
             const Tensor& scale_s, const Tensor& scale_o, std::optional<float> attn_scale,
             bool generate_stats, bool causal_mask, bool causal_mask_bottom_right,
             bool padding_mask, const std::optional<Tensor>& seq_len_q,
             const std::optional<Tensor>& seq_len_kv, std::optional<DataType> compute,
             const std::optional<std::string>& name) {
            const auto locked = lock(g);
            SdpaFp8Attributes attributes;
            attributes.set_generate_stats(generate_stats);
            const std::optional<Tensor> none;
            const AttentionArgs args{attn_scale,   causal_mask, causal_mask_bottom_right,
                                     padding_mask, seq_len_q,   seq_len_kv,
                                     compute,      name,        std::nullopt,
                                     none,         none,        false};
            const auto [o, stats, amax_s, amax_o] =
                g.graph.sdpa_fp8(q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s,
                                 scale_o, attention_score_attributes(attributes, args));
            return std::make_tuple(o, present(stats), amax_s, amax_o);
          },
          "q"_a, "k"_a, "v"_a, "descale_q"_a, "descale_k"_a, "descale_v"_a, "descale_s"_a,
          "scale_s"_a, "scale_o"_a, nb::kw_only(), "attn_scale"_a = nb::none(),
          "generate_stats"_a = false, "causal_mask"_a = false, "causal_mask_bottom_right"_a = false,
          "padding_mask"_a = false, "seq_len_q"_a = nb::none(), "seq_len_kv"_a = nb::none(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "FP8 scaled dot-product attention forward (cuDNN >= 9.1, Hopper): Q, K, V in\n"
          "Fp8E4M3 ([b, h, s, d], head dims multiples of 16 up to 256, h_k and h_v dividing\n"
          "h_q) and six per-tensor factors, each Float [1, 1, 1, 1] in device memory:\n"
          "P = softmax(attn_scale * descale_q * descale_k * Q K^T + masks),\n"
          "O = scale_o * descale_s * descale_v * (FP8(scale_s * P) V). Returns (O, Stats,\n"
          "Amax_S, Amax_O): O Fp8E4M3, Stats (Float [b, h_q, s_q, 1]) only with\n"
          "generate_stats=True, else None, Amax_S = max |P| and Amax_O = max |O / scale_o|\n"
          "(Float [1, 1, 1, 1]). causal_mask: top-left (bottom-right is refused on Hopper);\n"
          "padding_mask needs seq_len_q and seq_len_kv (Int32 [b, 1, 1, 1]).")
      .def(
          "sdpa_fp8_backward",
          [](PyGraph& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
             const Tensor& d_o, const Tensor& stats, const Tensor& descale_q,
             const Tensor& descale_k, const Tensor& descale_v, const Tensor& descale_o,
             const Tensor& descale_do, const Tensor& descale_s, const Tensor& descale_dp,
             const Tensor& scale_s, const Tensor& scale_dq, const Tensor& scale_dk,
             const Tensor& scale_dv, const Tensor& scale_dp, std::optional<float> attn_scale,
             bool causal_mask, bool causal_mask_bottom_right, bool padding_mask,
             const std::optional<Tensor>& seq_len_q, const std::optional<Tensor>& seq_len_kv,
             std::optional<DataType> compute, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            SdpaFp8BackwardAttributes attributes;
            const std::optional<Tensor> none;
            const AttentionArgs args{attn_scale,   causal_mask, causal_mask_bottom_right,
                                     padding_mask, seq_len_q,   seq_len_kv,
                                     compute,      name,        std::nullopt,
                                     none,         none,        false};
            const auto out = g.graph.sdpa_fp8_backward(
                q, k, v, o, d_o, stats, descale_q, descale_k, descale_v, descale_o, descale_do,
                descale_s, descale_dp, scale_s, scale_dq, scale_dk, scale_dv, scale_dp,
                attention_score_attributes(attributes, args));
            return std::make_tuple(out[0], out[1], out[2], out[3], out[4], out[5], out[6]);
          },
          "q"_a, "k"_a, "v"_a, "o"_a, "d_o"_a, "stats"_a, "descale_q"_a, "descale_k"_a,
          "descale_v"_a, "descale_o"_a, "descale_do"_a, "descale_s"_a, "descale_dp"_a, "scale_s"_a,
          "scale_dq"_a, "scale_dk"_a, "scale_dv"_a, "scale_dp"_a, nb::kw_only(),
          "attn_scale"_a = nb::none(), "causal_mask"_a = false,
          "causal_mask_bottom_right"_a = false, "padding_mask"_a = false,
          "seq_len_q"_a = nb::none(), "seq_len_kv"_a = nb::none(),
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "The gradients of sdpa_fp8() (cuDNN >= 9.7, Hopper): from Q, K, V and the forward's O\n"
          "(Fp8E4M3, head dims 128), dO (Fp8E4M3 or Fp8E5M2), the forward's Stats (Float\n"
          "[b, h_q, s_q, 1]) and twelve per-tensor factors, each Float [1, 1, 1, 1] in device\n"
          "memory, with the forward's attn_scale and masks. Returns (dQ, dK, dV, Amax_dQ,\n"
          "Amax_dK, Amax_dV, Amax_dP): the gradients in dO's FP8 type, dV = scale_dv *\n"
          "descale_s * descale_do * (FP8(scale_s P)^T dO), dQ = scale_dq * descale_dp *\n"
          "descale_k * (FP8(scale_dp dS) K), dK likewise with Q; each amax (Float [1, 1, 1, 1])\n"
          "before its scale, Amax_dP the amax of dS. Mark all seven outputs.")
      .def(
          "sdpa_backward",
          [](PyGraph& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
             const Tensor& d_o, const Tensor& stats, std::optional<float> attn_scale,
             bool causal_mask, bool causal_mask_bottom_right, bool padding_mask,
             const std::optional<Tensor>& seq_len_q, const std::optional<Tensor>& seq_len_kv,
             std::optional<double> dropout, const std::optional<Tensor>& seed,
             const std::optional<Tensor>& offset, bool dropout_mask_output,
             const std::optional<Tensor>& bias, std::optional<std::int64_t> sliding_window_length,
             const std::optional<Tensor>& alibi_slopes, bool dbias_output,
             std::optional<DataType> compute, const std::optional<std::string>& name) {
            const auto locked = lock(g);
            SdpaBackwardAttributes attributes;
            score_modifiers(attributes, bias, sliding_window_length, alibi_slopes)
                .set_dbias_output(dbias_output);
            const AttentionArgs args{attn_scale,   causal_mask, causal_mask_bottom_right,
                                     padding_mask, seq_len_q,   seq_len_kv,
                                     compute,      name,        dropout,
                                     seed,         offset,      dropout_mask_output};
            const auto [dq, dk, dv, d] = g.graph.sdpa_backward(
                q, k, v, o, d_o, stats, attention_attributes(attributes, args));
            return std::make_tuple(dq, dk, dv, d);
          },
          "q"_a, "k"_a, "v"_a, "o"_a, "d_o"_a, "stats"_a, nb::kw_only(),
          "attn_scale"_a = nb::none(), "causal_mask"_a = false,
          "causal_mask_bottom_right"_a = false, "padding_mask"_a = false,
          "seq_len_q"_a = nb::none(), "seq_len_kv"_a = nb::none(), "dropout"_a = nb::none(),
          "seed"_a = nb::none(), "offset"_a = nb::none(), "dropout_mask_output"_a = false,
          "bias"_a = nb::none(), "sliding_window_length"_a = nb::none(),
          "alibi_slopes"_a = nb::none(), "dbias_output"_a = false,
          "compute_data_type"_a = nb::none(), "name"_a = nb::none(),
          "The gradients of sdpa() from Q, K, V, the forward's O and Stats, and dO, with the\n"
          "forward's scale, masks and dropout (the same dropout, seed and offset draw the\n"
          "forward's mask again). Returns (dQ, dK, dV, D): D = rowsum(dO * O) (with dropout\n"
          "times 1 - dropout; Float [b, h_q, s_q, 1]) is written to memory for cuDNN's\n"
          "engines; mark all four outputs. bias=, sliding_window_length=, alibi_slopes= are the\n"
          "forward's;\n"
          "dbias_output=True also writes the bias's gradient (a bias of [1, h_q, s_q, s_kv]\n"
          "only): dbias(dQ) gives it.")
      .def("dropout_mask", &output_of_node<&Graph::dropout_mask>, "output"_a,
           "The dropout mask an sdpa or sdpa_backward node writes (dropout_mask_output=True),\n"
           "from any output of that node (O, dQ): Float [b, h_q, s_q, s_kv], 0 or 1; mark it\n"
           "set_output(True). None for a node that writes no mask.")
      .def("dbias", &output_of_node<&Graph::dbias>, "output"_a,
           "The bias gradient an sdpa_backward node writes (dbias_output=True), from any of its\n"
           "outputs (dQ): [1, h_q, s_q, s_kv] in Q's type; mark it set_output(True). None for a\n"
           "node that writes none.");
}

// The empty handle get_workspace_size() passes when the caller gives none (and no overrides).
const Handle& no_handle() {
  static const Handle empty;
  return empty;
}

bool any_given(nb::handle a, nb::handle b, nb::handle c) {
  return !a.is_none() || !b.is_none() || !c.is_none();
}

void def_run(nb::class_<PyGraph>& cls) {
  cls.def(
         "validate",
         [](PyGraph& g) {
           const auto locked = lock(g);
           unwrap(g.graph.validate());
         },
         "Checks every tensor and node, infers node outputs, assigns missing uids.")
      .def(
          "lower", [](PyGraph& g) { return run_unlocked(g, [](Graph& gr) { return gr.lower(); }); },
          "validate(), then creates and finalizes the backend descriptors (no GPU needed).")
      .def(
          "key", [](PyGraph& g) { return run_unlocked(g, [](Graph& gr) { return gr.key(); }); },
          "A digest (32 hex characters) of everything lower() gives cuDNN for this graph and of "
          "its dynamic-shape and override-shape settings: equal keys, the same graph for cuDNN. "
          "No GPU needed.")
      .def(
          "topology_key",
          [](PyGraph& g) { return run_unlocked(g, [](Graph& gr) { return gr.topology_key(); }); },
          "key() without the tensors' dims, and with their strides reduced to their order: one "
          "key for the shapes of a topology, a KernelCacheStore name.")
      .def(
          "build",
          [](PyGraph& g, const Handle& handle, const std::vector<HeuristicMode>& modes) {
            build_unlocked(g, [&](Graph& gr) { return gr.build(handle, modes); });
          },
          "handle"_a, "modes"_a,
          "lower(), then the operation graph, heuristics in the given order and the first\n"
          "execution plan that finalizes. The GIL is released meanwhile.")
      .def(
          "build",
          [](PyGraph& g, const Handle& handle, const std::vector<HeuristicMode>& modes,
             const PlanPolicy& policy) {
            build_unlocked(g, [&](Graph& gr) { return gr.build(handle, modes, policy); });
          },
          "handle"_a, "modes"_a, "policy"_a,
          "build() under a PlanPolicy: its filters, and the first plan, the one at\n"
          "policy.plan_index, or the pinned policy.engine (docs/plan-control.md).")
      .def(
          "serialize",
          [](PyGraph& g) {
            const auto locked = lock(g);
            return unwrap(g.graph.serialize());
          },
          "After build(): the built plan as a JSON text for deserialize() in another process\n"
          "(cuDNN version, GPU, key(), engine config, cuDNN's plan document where the engine\n"
          "gives one). Load only documents your own processes wrote.")
      .def(
          "deserialize",
          [](PyGraph& g, const Handle& handle, const std::string& document) {
            build_unlocked(g, [&](Graph& gr) { return gr.deserialize(handle, document); });
          },
          "handle"_a, "document"_a,
          "Instead of build(): the same graph described again, its plan taken from serialize()'s\n"
          "document with no heuristics query. Raises when the document is not serialize()'s, the\n"
          "cuDNN version or GPU differ, or this graph's key() is not the document's. The GIL is\n"
          "released meanwhile.")
      .def(
          "plan_count",
          [](PyGraph& g) {
            const auto locked = lock(g);
            return unwrap(g.graph.plan_count());
          },
          "After build(): the candidates the policy's filters left.")
      .def(
          "build_plan_at",
          [](PyGraph& g, const Handle& handle, std::int64_t index) {
            build_unlocked(g, [&](Graph& gr) { return gr.build_plan_at(handle, index); });
          },
          "handle"_a, "index"_a,
          "Builds again with the last build's modes and policy, taking candidate `index`.")
      .def(
          "autotune",
          [](PyGraph& g, const Handle& handle, nb::handle variant_pack, nb::handle workspace,
             std::optional<std::int64_t> workspace_bytes, std::int64_t warmup,
             std::int64_t iterations, std::int64_t max_candidates) {
            CallBuffers buffers;
            const auto checked = built_layouts(g);
            const auto& pack = buffers.variant_pack(variant_pack, checked->layouts);
            void* ws = optional_device_pointer(workspace, "workspace");
            std::int64_t bytes = 0;
            if (workspace_bytes) {
              bytes = *workspace_bytes;
            } else if (!workspace.is_none()) {
              bytes = buffer_bytes(workspace, "workspace");
            }
            const AutotuneOptions options{
                .warmup = warmup, .iterations = iterations, .max_candidates = max_candidates};
            return build_unlocked(g, [&](Graph& gr) -> Result<AutotuneReport> {
              if (auto ok = still_built(g, checked, "autotune"); !ok) {
                return std::unexpected(ok.error());
              }
              return gr.autotune(handle, pack, ws, bytes, options);
            });
          },
          "handle"_a, "variant_pack"_a, "workspace"_a = nb::none(), nb::kw_only(),
          "workspace_bytes"_a = nb::none(), "warmup"_a = 3, "iterations"_a = 20,
          "max_candidates"_a = 8,
          "After build(): builds the first max_candidates ranked candidates in turn, times each\n"
          "on these buffers with CUDA events (warmup runs, then the median of iterations) and\n"
          "keeps the fastest; returns the AutotuneReport. A candidate needing more workspace\n"
          "than given is skipped (workspace_bytes defaults to a torch workspace's size). The\n"
          "outputs are overwritten. Raises NoEngine, keeping the plan, when none can be timed.")
      .def("is_built",
           [](PyGraph& g) {
             const auto locked = lock(g);
             return g.graph.is_built();
           })
      .def(
          "plan_info",
          [](PyGraph& g) {
            const auto locked = lock(g);
            return unwrap(g.graph.plan_info());
          },
          "What build() chose.")
      .def(
          "check_overrides",
          [](PyGraph& g, nb::handle uids, nb::handle shapes, nb::handle strides) {
            CallBuffers buffers;
            const OverrideLists o = buffers.overrides(uids, shapes, strides);
            const auto locked = lock(g);
            unwrap(g.graph.check_overrides(o.uids, o.shapes, o.strides));
          },
          "override_uids"_a, "override_shapes"_a, "override_strides"_a,
          nb::sig("def check_overrides(self, override_uids: Sequence[int], "
                  "override_shapes: Sequence[Sequence[int]], "
                  "override_strides: Sequence[Sequence[int]]) -> None"),
          "Checks override lists exactly as execute() does, without running anything (after\n"
          "validate() or build()).")
      .def(
          "get_workspace_size",
          [](PyGraph& g, const Handle* handle, nb::handle uids, nb::handle shapes,
             nb::handle strides) {
            if (!any_given(uids, shapes, strides)) {
              const auto locked = lock(g);
              return unwrap(g.graph.get_workspace_size());
            }
            CallBuffers buffers;
            const OverrideLists o = buffers.overrides(uids, shapes, strides);
            const Handle& h = handle != nullptr ? *handle : no_handle();
            return run_unlocked(g, [&](Graph& gr) {
              return gr.get_workspace_size(h, o.uids, o.shapes, o.strides);
            });
          },
          "handle"_a.none() = nb::none(), "override_uids"_a = nb::none(),
          "override_shapes"_a = nb::none(), "override_strides"_a = nb::none(),
          nb::sig("def get_workspace_size(self, handle: Handle | None = None, "
                  "override_uids: Sequence[int] | None = None, "
                  "override_shapes: Sequence[Sequence[int]] | None = None, "
                  "override_strides: Sequence[Sequence[int]] | None = None) -> int"),
          "Bytes of workspace execute() needs; with overrides (and a handle), for those shapes.")
      .def(
          "execute",
          [](PyGraph& g, const Handle& handle, nb::handle variant_pack, nb::handle workspace,
             nb::handle uids, nb::handle shapes, nb::handle strides) {
            CallBuffers buffers;
            const auto checked = built_layouts(g);
            if (!any_given(uids, shapes, strides)) {
              const auto& pack = buffers.variant_pack(variant_pack, checked->layouts);
              void* ws = workspace_pointer(workspace, checked->workspace);
              run_unlocked(g, [&](Graph& gr) -> Result<void> {
                if (auto ok = still_built(g, checked, "execute"); !ok) {
                  return ok;
                }
                return gr.execute(handle, pack, ws);
              });
              return;
            }
            const OverrideLists o = buffers.overrides(uids, shapes, strides);
            const auto& pack = buffers.variant_pack(variant_pack, checked->layouts, o);
            void* ws = workspace_pointer(workspace, -1);  // the overrides' size is not known here
            const std::optional<std::int64_t> ws_bytes = torch_bytes(workspace);
            run_unlocked(g, [&](Graph& gr) -> Result<void> {
              if (auto ok = still_built(g, checked, "execute"); !ok) {
                return ok;
              }
              if (ws_bytes) {
                // What these overrides need (memoized per set, as execute() asks it): a torch
                // workspace must hold it, as it must hold the build shapes' without overrides.
                auto needed = gr.get_workspace_size(handle, o.uids, o.shapes, o.strides);
                if (!needed) {
                  return std::unexpected(needed.error());
                }
                if (*needed > *ws_bytes) {
                  return std::unexpected(Error{
                      ErrorCode::InvalidAttribute,
                      "workspace: a torch tensor of " + std::to_string(*ws_bytes) +
                          " bytes, where the plan needs " + std::to_string(*needed) +
                          " for these overrides (get_workspace_size(handle, the override lists))"});
                }
              }
              return gr.execute(handle, pack, ws, o.uids, o.shapes, o.strides);
            });
          },
          "handle"_a, "variant_pack"_a, "workspace"_a = nb::none(), nb::kw_only(),
          "override_uids"_a = nb::none(), "override_shapes"_a = nb::none(),
          "override_strides"_a = nb::none(),
          nb::sig("def execute(self, handle: Handle, variant_pack: Mapping[int, object], "
                  "workspace: object | None = None, *, "
                  "override_uids: Sequence[int] | None = None, "
                  "override_shapes: Sequence[Sequence[int]] | None = None, "
                  "override_strides: Sequence[Sequence[int]] | None = None) -> None"),
          "Runs the built plan. variant_pack: {uid: buffer} for every non-virtual tensor, a\n"
          "buffer being a CUDA torch tensor, an object with __cuda_array_interface__ or a CUDA\n"
          "__dlpack__, or an int device pointer; workspace likewise, or None when 0 bytes are\n"
          "needed. With overrides (set_override_shape_enabled before build) the three lists\n"
          "give each listed tensor's dims and strides for this run. A buffer that says what it\n"
          "holds (torch, __cuda_array_interface__, __dlpack__) must have its tensor's dims,\n"
          "strides (those of size-1 dims aside) and data type, else dnngraph.Error\n"
          "(ShapeMismatch / InvalidAttribute); a torch workspace must hold\n"
          "get_workspace_size() bytes (with overrides: for those lists). Int pointers are taken\n"
          "unchecked; so are the extents of other workspace objects. The GIL is released\n"
          "while cuDNN is called.");
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<PyGraph> cls(
      m, "Graph",
      "A fused operation graph: describe it, validate it, build it once with a\n"
      "Handle, then execute it many times. Errors raise dnngraph.Error.");
  def_options(cls);
  def_nodes(cls);
  def_run(cls);
}

}  // namespace dnngraph::python
