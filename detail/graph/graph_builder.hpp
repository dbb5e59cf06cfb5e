// detail::GraphBuilder (internal, not installed): the steps Graph's node builders share — a
// node's output and internal tensors, the checks of its inputs, adding it; the norms' and the
// attention nodes' common parts — and the view a built plan reads of the graph. Kept out of the
// installed api/graph.hpp, which then changes only with the public face; Graph befriends it. The
// bodies are beside the builders that call them: api/graph.cpp, graph_attention.cpp,
// graph_norms.cpp (and view() in graph_validate.cpp).
#pragma once

#include "api/graph.hpp"
#include "api/node_attributes.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"
#include "detail/graph/pipeline.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/norm.hpp"
#include "detail/nodes/norm_backward.hpp"
#include "detail/nodes/sdpa_common.hpp"

#include <array>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace dnngraph::detail {

struct GraphBuilder {
  // A node's output tensor, virtual, named "<node>::<port>", owned by the graph.
  static TensorPtr add_output(Graph& g, const std::string& node_name, const char* port);
  // A composite node's internal virtual tensor ("<name>::<port>"), owned by the graph.
  static TensorPtr add_internal(Graph& g, const std::string& node_name, const char* port);

  // (port name, tensor), e.g. {"A", a.get()}; the port names the input in errors.
  using Input = std::pair<const char*, TensorAttributes*>;
  // Labels unnamed inputs for messages ("input A of node #3 (matmul 'matmul_3')"); records an
  // error and answers false for a null input or one of another graph.
  static bool check_inputs(Graph& g, std::string_view node, std::initializer_list<Input> inputs);
  static bool check_inputs(Graph& g, std::string_view node, std::span<const Input> inputs);

  // The one path that adds a node of one output: the output tensor (virtual, named
  // "<name>::<output>"), the input checks, and make(output) appended when they pass. The output
  // is returned either way: a mistake surfaces at validate().
  using NodeFactory = std::function<std::unique_ptr<Node>(const TensorPtr&)>;
  static TensorPtr add_node(Graph& g, NodeKind kind, const std::string& name,
                            std::initializer_list<Input> inputs, const char* output,
                            const NodeFactory& make);
  static TensorPtr add_node(Graph& g, NodeKind kind, const std::string& name,
                            std::span<const Input> inputs, const char* output,
                            const NodeFactory& make);

  // check_inputs for an attention node's optional inputs that are given: the length tensors, and
  // with dropout the seed and offset.
  static bool check_attention_inputs(Graph& g, const std::string& node,
                                     const AttentionSettings& settings);
  // An attention node's dropout tensors (see DropoutPorts): its by-value scale and mask.
  static DropoutPorts dropout_ports(Graph& g, const std::string& node_name,
                                    const AttentionSettings& settings);
  // What sdpa_fp8() and sdpa_fp8_backward() share once the ports p hold the given tensors and
  // the node's outputs: the input checks, the length tensors, then the node, its scalars and
  // internal tensors made by Ports::make_internals. Defined and used in api/graph_attention.cpp
  // only.
  template <class Fp8Node, class Ports, class Attributes>
  static void add_fp8_attention(Graph& g, const std::string& node, std::span<const Input> inputs,
                                Ports& p, Attributes attributes);

  // What layernorm(), rmsnorm() and batchnorm() share: the checks of phase, epsilon and inputs,
  // the outputs the phase asks for, and the node.
  struct NormRequest {
    NormKind kind;
    std::string name;
    std::optional<NormFwdPhase> phase;
    TensorPtr epsilon;
    std::optional<DataType> compute;
    TensorPtr x, scale, bias;
    // batchnorm's running statistics (all or none)
    TensorPtr momentum, prev_running_mean, prev_running_var;
  };
  static NormPorts add_norm(Graph& g, const NormRequest& r);
  // What layernorm(), instancenorm() and adalayernorm() share: add_norm of X, scale and bias with
  // the attributes' name (or "<kind>_<index>"), phase, epsilon and compute type. Returns {Y,
  // mean, inv_variance}. Defined and used in api/graph_norms.cpp only.
  template <class Attributes>
  static std::array<TensorPtr, 3> add_mean_norm(Graph& g, NormKind kind, const TensorPtr& x,
                                                const TensorPtr& scale, const TensorPtr& bias,
                                                const Attributes& attributes);
  // What the norm backward nodes share (mean null for RMS).
  static NormBackwardPorts add_norm_backward(Graph& g, NormKind kind,
                                             NormBackwardAttributes attributes,
                                             NormBackwardPorts inputs);
  // add_norm_backward of the norms with a mean (all but RMS): {dX, dScale, dBias}.
  static std::array<TensorPtr, 3> add_mean_norm_backward(
      Graph& g, NormKind kind, const TensorPtr& dy, const TensorPtr& x, const TensorPtr& scale,
      const TensorPtr& mean, const TensorPtr& inv_variance, NormBackwardAttributes attributes);

  // What the built plan reads of this graph at each call.
  [[nodiscard]] static GraphView view(const Graph& g);
};

}  // namespace dnngraph::detail
