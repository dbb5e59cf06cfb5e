// libFuzzer harness for graph construction: builds a Graph from the fuzz bytes (half of them:
// tensors with any dims, strides, types and names and nodes of every kind with any attribute
// values, NaN and out-of-range enums included; the other half: a graph of one node kind within
// the ranges it takes, plausible_graphs.hpp; then edits after validation), and runs validate(),
// lower() (cuDNN creates and finalizes backend descriptors without a GPU), check_overrides()
// with override lists drawn from the bytes and, on dynamic-shape graphs, a kernel cache built on
// the CPU whose document cuDNN writes and from_json must take again. Promise under test: every
// input gives a value or an Error; no crash, no undefined behaviour, no leak; the kernel cache of
// every graph that builds one persists. Build and run: tests/fuzz/CMakeLists.txt.
#include "api/graph.hpp"
#include "api/kernel_cache.hpp"
#include "detail/graph/graph_access.hpp"
#include "plausible_graphs.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

// Every Error names what went wrong: an empty message is a finding (the trap reports it).
template <class T>
void expect_message(const dnngraph::Result<T>& r) {
  if (!r && r.error().message.empty()) {
    __builtin_trap();
  }
}

// What the user can see of a tensor; a failed validate() must leave all of it as it was.
struct Seen {
  std::string name;
  std::optional<std::int64_t> uid;
  Dims dims, strides;
  std::optional<DataType> type;
  bool is_virtual = false;
  std::optional<std::uint32_t> value_bits;  // bits, so that NaN equals itself

  explicit Seen(const TensorAttributes& t)
      : name(t.name()),
        uid(t.uid()),
        dims(t.dim()),
        strides(t.stride()),
        type(t.data_type()),
        is_virtual(t.is_virtual()) {
    if (const auto v = t.value()) {
      value_bits = std::bit_cast<std::uint32_t>(*v);
    }
  }
  bool operator==(const Seen&) const = default;
};

// validate(), trapping when it fails and changes what the user can see of a tensor.
void validate(Graph& g, const std::vector<TensorPtr>& pool) {
  std::vector<Seen> before;
  before.reserve(pool.size());
  for (const auto& t : pool) {
    before.emplace_back(*t);
  }
  const auto ok = g.validate();
  expect_message(ok);
  if (ok) {
    return;
  }
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (!(Seen(*pool[i]) == before[i])) {
      __builtin_trap();
    }
  }
}

// Kernel cache documents that went through from_json, per node kind of their graphs, printed
// at exit: a run that round-trips few documents of a kind has not tested that kind.
struct RoundTrips {
  std::map<std::string, std::int64_t> by_kind;
  std::int64_t documents = 0;
  RoundTrips() = default;
  RoundTrips(const RoundTrips&) = delete;
  RoundTrips& operator=(const RoundTrips&) = delete;
  RoundTrips(RoundTrips&&) = delete;
  RoundTrips& operator=(RoundTrips&&) = delete;
  ~RoundTrips() {
    std::fprintf(stderr, "graph_fuzz: %lld kernel cache documents loaded again; graphs with\n",
                 static_cast<long long>(documents));
    for (const auto& [kind, count] : by_kind) {
      std::fprintf(stderr, "  %-22s %lld\n", kind.c_str(), static_cast<long long>(count));
    }
  }
};
RoundTrips round_trips;

// A dynamic-shape graph gets a new kernel cache built on the CPU (cuDNN 9.19 finalizes it without
// a GPU); cuDNN's document of it must load into a fresh cache: from_json refusing what to_json
// wrote is a finding (issue 35: the cache would never persist), and so is a build that succeeded
// without a document.
void round_trip_kernel_cache(Graph& g) {
  auto cache = std::make_shared<dnngraph::KernelCache>();
  g.set_kernel_cache(cache);
  const auto built = dnngraph::detail::GraphAccess::build_kernel_cache(g);
  g.set_kernel_cache(nullptr);
  expect_message(built);
  if (!built) {
    return;
  }
  const auto document = cache->to_json();
  if (!document) {
    std::fprintf(stderr, "graph_fuzz: to_json of a built cache failed: %s\n",
                 document.error().message.c_str());
    __builtin_trap();
  }
  dnngraph::KernelCache fresh;
  if (const auto loaded = fresh.from_json(*document); !loaded) {
    std::fprintf(stderr, "graph_fuzz: from_json refused cuDNN's own document: %s\n%s\n",
                 loaded.error().message.c_str(), document->c_str());
    __builtin_trap();
  }
  ++round_trips.documents;
  if (const auto lowered = g.lower()) {
    std::set<std::string> kinds;  // "matmul 'mm'" -> matmul, once per graph
    for (const std::string& node : lowered->operations) {
      kinds.insert(node.substr(0, node.find(' ')));
    }
    for (const std::string& kind : kinds) {
      ++round_trips.by_kind[kind];
    }
  }
}

// Values that sit on the edges the checks care about: 0, negatives, int64 limits, powers of two
// near overflow. Most draws are small so that many graphs get past validation.
std::int64_t extent(FuzzedDataProvider& in) {
  static constexpr std::array<std::int64_t, 12> edges{0,
                                                      -1,
                                                      std::numeric_limits<std::int64_t>::min(),
                                                      std::numeric_limits<std::int64_t>::max(),
                                                      std::int64_t{1} << 31,
                                                      std::int64_t{1} << 32,
                                                      (std::int64_t{1} << 61) + 16,
                                                      std::int64_t{1} << 62,
                                                      (std::int64_t{1} << 62) + 16,
                                                      3'037'000'500,  // just above sqrt(2^63)
                                                      1024,
                                                      33};
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return edges[in.ConsumeIntegralInRange<std::size_t>(0, edges.size() - 1)];
    case 1: return in.ConsumeIntegral<std::int64_t>();
    default: return in.ConsumeIntegralInRange<std::int64_t>(1, 16);
  }
}

Dims dims(FuzzedDataProvider& in, std::size_t max_rank = 10) {
  Dims out(in.ConsumeIntegralInRange<std::size_t>(0, max_rank));
  for (auto& d : out) {
    d = extent(in);
  }
  return out;
}

// Empty, packed for the dims (when they allow it), or drawn.
Dims strides(FuzzedDataProvider& in, const Dims& for_dims) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return {};
    case 1:
      if (dnngraph::element_count(for_dims)) {
        return dnngraph::packed_strides(for_dims);
      }
      return {};
    case 2: return dims(in, for_dims.size() + 1);
    default: {
      Dims out(for_dims.size());
      for (auto& s : out) {
        s = extent(in);
      }
      return out;
    }
  }
}

// Any byte as the enum: values past the last enumerator are the point.
template <class E>
E any_enum(FuzzedDataProvider& in) {
  return static_cast<E>(in.ConsumeIntegral<std::uint8_t>());
}

template <class E>
E some_enum(FuzzedDataProvider& in, int count) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    return any_enum<E>(in);
  }
  return static_cast<E>(in.ConsumeIntegralInRange<int>(0, count - 1));
}

std::optional<DataType> data_type(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) {
    return std::nullopt;
  }
  return some_enum<DataType>(in, 11);
}

float any_float(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -1e-5F;
    case 3: return in.ConsumeFloatingPoint<float>();
    default: return 1e-5F;
  }
}

void edit(FuzzedDataProvider& in, TensorAttributes& t) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: t.set_dim(dims(in)); break;
    case 1: t.set_stride(strides(in, t.dim())); break;
    case 2:
      if (const auto type = data_type(in)) {
        t.set_data_type(*type);
      }
      break;
    case 3: t.set_uid(in.ConsumeIntegralInRange<std::int64_t>(-2, 40)); break;
    case 4: t.set_output(in.ConsumeBool()); break;
    case 5: t.set_name(in.ConsumeBool() ? "" : "t"); break;
    case 6: t.set_value(any_float(in)); break;
    default: break;
  }
}

TensorAttributes input(FuzzedDataProvider& in) {
  TensorAttributes t;
  if (in.ConsumeBool()) {
    t.set_name("in");
  }
  Dims d = dims(in, 9);
  t.set_stride(strides(in, d)).set_dim(std::move(d));
  if (const auto type = data_type(in)) {
    t.set_data_type(*type);
  }
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
    t.set_uid(in.ConsumeIntegralInRange<std::int64_t>(-2, 40));
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    t.set_is_virtual(true);
  }
  return t;
}

template <class A>
void convolution_lists(FuzzedDataProvider& in, A& a) {
  const auto list = [&] { return dims(in, 4); };
  if (in.ConsumeBool()) a.set_padding(list());
  if (in.ConsumeBool()) a.set_pre_padding(list());
  if (in.ConsumeBool()) a.set_post_padding(list());
  if (in.ConsumeBool()) a.set_stride(list());
  if (in.ConsumeBool()) a.set_dilation(list());
  if (in.ConsumeBool()) a.set_convolution_mode(some_enum<dnngraph::ConvolutionMode>(in, 2));
  if (in.ConsumeBool()) a.set_group_count(in.ConsumeIntegralInRange<std::int64_t>(-2, 70));
  if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
}

// Adds one node of a kind drawn from the bytes, reading tensors from the pool (sometimes null or
// from another graph), and puts its outputs in the pool.
void add_node(FuzzedDataProvider& in, Graph& g, Graph& other, std::vector<TensorPtr>& pool) {
  const auto pick = [&]() -> TensorPtr {
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: return nullptr;
      case 1: return other.tensor(TensorAttributes().set_dim({1, 1, 1}));
      case 2: return g.tensor(any_float(in));
      default: return pool[in.ConsumeIntegralInRange<std::size_t>(0, pool.size() - 1)];
    }
  };
  // Attention's attributes, drawn (the forward's and the backward's share them).
  const auto attention = [&](auto& a) {
    if (in.ConsumeBool()) a.set_attn_scale(any_float(in));
    if (in.ConsumeBool()) a.set_causal_mask(in.ConsumeBool());
    if (in.ConsumeBool()) a.set_causal_mask_bottom_right(in.ConsumeBool());
    if (in.ConsumeBool()) {
      a.set_padding_mask(in.ConsumeBool()).set_seq_len_q(pick()).set_seq_len_kv(pick());
    }
    if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
      a.set_dropout(in.ConsumeFloatingPoint<double>(), pick(), pick());
      if (in.ConsumeBool()) a.set_dropout_mask_output(in.ConsumeBool());
    }
  };
  // Outputs of a node with several, into the pool (the absent ones are null).
  const auto keep = [&](const auto& outs) {
    for (const auto& out : outs) {
      if (out) pool.push_back(out);
    }
  };
  // A norm's phase and epsilon, drawn.
  const auto norm = [&](auto& a) {
    if (in.ConsumeIntegralInRange<int>(0, 15) != 0) {
      a.set_forward_phase(some_enum<dnngraph::NormFwdPhase>(in, 2));
    }
    if (in.ConsumeIntegralInRange<int>(0, 15) != 0) a.set_epsilon(pick());
  };
  // Batch statistics' epsilon and running statistics, drawn (batchnorm and bn_finalize).
  const auto batch_statistics = [&](auto& a) {
    if (in.ConsumeIntegralInRange<int>(0, 15) != 0) a.set_epsilon(pick());
    if (in.ConsumeBool()) a.set_previous_running_stats(pick(), pick(), pick());
  };
  // A resample's mode and window geometry, drawn (forward and backward share them).
  const auto window = [&](auto& a) {
    const auto list = [&] { return dims(in, 4); };
    if (in.ConsumeIntegralInRange<int>(0, 15) != 0) {
      a.set_mode(some_enum<dnngraph::ResampleMode>(in, 3));
    }
    if (in.ConsumeIntegralInRange<int>(0, 7) != 0) a.set_window(list());
    if (in.ConsumeIntegralInRange<int>(0, 7) != 0) a.set_stride(list());
    if (in.ConsumeBool()) a.set_padding(list());
    if (in.ConsumeBool()) a.set_pre_padding(list());
    if (in.ConsumeBool()) a.set_post_padding(list());
    if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
  };
  // Sometimes a pooled tensor becomes ragged, its offsets drawn from the pool too.
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    if (auto t = pick()) {
      t->set_ragged_offset(pick());
    }
  }
  switch (in.ConsumeIntegralInRange<int>(0, 29)) {
    case 0: {
      dnngraph::MatmulAttributes a;
      if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
      pool.push_back(g.matmul(pick(), pick(), a));
      break;
    }
    case 1:
    case 2: {
      dnngraph::PointwiseAttributes a;
      if (in.ConsumeIntegralInRange<int>(0, 15) != 0) {
        a.set_mode(some_enum<dnngraph::PointwiseMode>(in, 49));
      }
      if (in.ConsumeBool()) a.set_swish_beta(any_float(in));
      if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
      switch (in.ConsumeIntegralInRange<int>(1, 3)) {
        case 1: pool.push_back(g.pointwise(pick(), a)); break;
        case 2: pool.push_back(g.pointwise(pick(), pick(), a)); break;
        default: pool.push_back(g.pointwise(pick(), pick(), pick(), a)); break;
      }
      break;
    }
    case 3: {
      dnngraph::ConvFpropAttributes a;
      convolution_lists(in, a);
      pool.push_back(g.conv_fprop(pick(), pick(), a));
      break;
    }
    case 4: {
      dnngraph::ConvDgradAttributes a;
      convolution_lists(in, a);
      pool.push_back(g.conv_dgrad(pick(), pick(), a));
      break;
    }
    case 5: {
      dnngraph::ConvWgradAttributes a;
      convolution_lists(in, a);
      pool.push_back(g.conv_wgrad(pick(), pick(), a));
      break;
    }
    case 6: {
      dnngraph::ReductionAttributes a;
      if (in.ConsumeIntegralInRange<int>(0, 15) != 0) {
        a.set_mode(some_enum<dnngraph::ReductionMode>(in, 9));
      }
      pool.push_back(g.reduction(pick(), a));
      break;
    }
    case 7: {
      dnngraph::LayernormAttributes a;
      norm(a);
      keep(g.layernorm(pick(), pick(), pick(), a));
      break;
    }
    case 8: {
      dnngraph::RmsnormAttributes a;
      norm(a);
      if (in.ConsumeBool()) a.set_bias(pick());
      keep(g.rmsnorm(pick(), pick(), a));
      break;
    }
    case 9: {
      dnngraph::ReshapeAttributes a;
      if (in.ConsumeBool()) {
        a.set_permutation(dims(in));
      }
      pool.push_back(g.reshape(pick(), a));
      if (in.ConsumeBool()) {
        pool.back()->set_dim(dims(in));  // a merge or split of dims
      }
      break;
    }
    case 10: {
      dnngraph::SdpaAttributes a;
      attention(a);
      if (in.ConsumeBool()) a.set_generate_stats(in.ConsumeBool());
      if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
        a.set_paged_attention(pick(), pick(), in.ConsumeIntegralInRange<std::int64_t>(-2, 300));
      }
      keep(g.sdpa(pick(), pick(), pick(), a));
      break;
    }
    case 11: {
      dnngraph::SdpaBackwardAttributes a;
      attention(a);
      keep(g.sdpa_backward(pick(), pick(), pick(), pick(), pick(), pick(), a));
      break;
    }
    case 12: {
      dnngraph::NormBackwardAttributes a;
      if (in.ConsumeBool()) a.set_compute_data_type(some_enum<DataType>(in, 11));
      keep(g.layernorm_backward(pick(), pick(), pick(), pick(), pick(), a));
      break;
    }
    case 13: {
      keep(g.rmsnorm_backward(pick(), pick(), pick(), pick()));
      break;
    }
    case 14: {
      dnngraph::BatchnormInferenceAttributes a;
      pool.push_back(g.batchnorm_inference(pick(), pick(), pick(), pick(), pick(), a));
      break;
    }
    case 15: {
      dnngraph::BatchnormAttributes a;
      batch_statistics(a);
      keep(g.batchnorm(pick(), pick(), pick(), a));
      break;
    }
    case 16: keep(g.batchnorm_backward(pick(), pick(), pick(), pick(), pick())); break;
    case 17: {
      dnngraph::InstancenormAttributes a;
      norm(a);
      keep(g.instancenorm(pick(), pick(), pick(), a));
      break;
    }
    case 18: keep(g.instancenorm_backward(pick(), pick(), pick(), pick(), pick())); break;
    case 19: {
      dnngraph::AdaLayernormAttributes a;
      norm(a);
      keep(g.adalayernorm(pick(), pick(), pick(), a));
      break;
    }
    case 20: keep(g.adalayernorm_backward(pick(), pick(), pick(), pick(), pick())); break;
    case 21: keep(g.genstats(pick())); break;
    case 22: {
      dnngraph::BnFinalizeAttributes a;
      batch_statistics(a);
      if (in.ConsumeIntegralInRange<int>(0, 15) != 0) a.set_accumulation_count(pick());
      keep(g.bn_finalize(pick(), pick(), pick(), pick(), a));
      break;
    }
    case 23: keep(g.dbn_weight(pick(), pick(), pick(), pick(), pick())); break;
    case 24: {
      dnngraph::ResampleAttributes a;
      window(a);
      if (in.ConsumeBool()) a.set_generate_index(in.ConsumeBool());
      keep(g.resample(pick(), a));
      break;
    }
    case 25: {
      dnngraph::ResampleBackwardAttributes a;
      window(a);
      if (in.ConsumeBool()) a.set_x(pick());
      if (in.ConsumeBool()) a.set_y(pick());
      if (in.ConsumeBool()) a.set_index(pick());
      pool.push_back(g.resample_backward(pick(), a));
      break;
    }
    case 26: {
      dnngraph::RngAttributes a;
      if (in.ConsumeIntegralInRange<int>(0, 15) != 0) {
        a.set_bernoulli_probability(in.ConsumeFloatingPoint<double>());
      }
      pool.push_back(g.rng(pick(), pick(), a));
      if (in.ConsumeBool()) {
        pool.back()->set_dim(dims(in));  // the mask's dims are the user's to set
      }
      break;
    }
    case 27: {
      dnngraph::ConcatenateAttributes a;
      a.set_axis(in.ConsumeIntegralInRange<std::int64_t>(-2, 6));
      if (in.ConsumeBool()) a.set_in_place_index(in.ConsumeIntegralInRange<std::int64_t>(-2, 5));
      std::vector<TensorPtr> inputs(in.ConsumeIntegralInRange<std::size_t>(0, 4));
      for (auto& t : inputs) {
        t = pick();
      }
      pool.push_back(g.concatenate(inputs, a));
      break;
    }
    default: {
      dnngraph::SliceAttributes a;
      std::vector<std::pair<std::int64_t, std::int64_t>> slices(
          in.ConsumeIntegralInRange<std::size_t>(0, 6));
      for (auto& [start, limit] : slices) {
        start = in.ConsumeIntegralInRange<std::int64_t>(-2, 40);
        limit = in.ConsumeIntegralInRange<std::int64_t>(-2, 40);
      }
      a.set_slices(std::move(slices));
      if (in.ConsumeBool()) a.set_strides(dims(in, 6));
      pool.push_back(g.slice(pick(), a));
      break;
    }
  }
}

// Override lists: mostly the tensors' own dims scaled a little (so the deeper checks run), some
// drawn freely, sometimes of unequal lengths.
void check_overrides(FuzzedDataProvider& in, const Graph& g, const std::vector<TensorPtr>& pool) {
  std::vector<std::int64_t> uids;
  std::vector<Dims> shapes;
  std::vector<Dims> strides_list;
  const std::size_t count = in.ConsumeIntegralInRange<std::size_t>(0, 4);
  for (std::size_t i = 0; i < count; ++i) {
    const TensorAttributes& t = *pool[in.ConsumeIntegralInRange<std::size_t>(0, pool.size() - 1)];
    uids.push_back(t.uid().value_or(in.ConsumeIntegral<std::int64_t>()));
    Dims d = t.dim();
    if (in.ConsumeBool()) {
      for (auto& v : d) {
        if (in.ConsumeBool()) v = extent(in);
      }
    } else if (in.ConsumeBool()) {
      d = dims(in);
    }
    Dims s = strides(in, d);
    if (s.empty() && in.ConsumeBool()) s = t.stride();
    shapes.push_back(std::move(d));
    strides_list.push_back(std::move(s));
  }
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0 && !shapes.empty()) {
    shapes.pop_back();
  }
  expect_message(g.check_overrides(uids, shapes, strides_list));
}

// Random inputs and nodes of any kind drawn with any attributes (most fail validation: the
// checks are the point), into the pool.
void add_random_graph(FuzzedDataProvider& in, Graph& g, Graph& other,
                      std::vector<TensorPtr>& pool) {
  if (in.ConsumeBool()) g.set_io_data_type(some_enum<DataType>(in, 11));
  if (in.ConsumeBool()) g.set_intermediate_data_type(some_enum<DataType>(in, 11));
  if (in.ConsumeBool()) g.set_compute_data_type(some_enum<DataType>(in, 11));
  const std::size_t inputs = in.ConsumeIntegralInRange<std::size_t>(1, 5);
  for (std::size_t i = 0; i < inputs; ++i) {
    pool.push_back(in.ConsumeIntegralInRange<int>(0, 5) == 0 ? g.tensor(any_float(in))
                                                             : g.tensor(input(in)));
  }
  const std::size_t nodes = in.ConsumeIntegralInRange<std::size_t>(0, 6);
  for (std::size_t i = 0; i < nodes; ++i) {
    add_node(in, g, other, pool);
  }
  // Outputs the user shapes or marks.
  for (std::size_t i = inputs; i < pool.size(); ++i) {
    if (in.ConsumeBool()) pool[i]->set_output(true);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) edit(in, *pool[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Graph g;
  Graph other;
  // Half the inputs build a graph of one node kind within the ranges it takes
  // (plausible_graphs.hpp), dynamic-shape: those reach cuDNN's kernel cache document.
  const bool plausible = in.ConsumeBool();
  g.set_override_shape_enabled(in.ConsumeIntegralInRange<int>(0, plausible ? 7 : 1) == 0);
  const bool dynamic = plausible || in.ConsumeBool();
  g.set_dynamic_shape_enabled(dynamic);

  std::vector<TensorPtr> pool;
  pool.reserve(64);
  if (plausible) {
    for (const auto& out : dnngraph::fuzz::PlausibleGraph(in, g).add()) {
      if (out) pool.push_back(out);
    }
  } else {
    add_random_graph(in, g, other, pool);
  }
  // Edits, validations and checks in any order.
  while (in.remaining_bytes() > 0) {
    switch (in.ConsumeIntegralInRange<int>(0, 6)) {
      case 0: validate(g, pool); break;
      case 1: expect_message(g.lower()); break;
      case 2:
      case 3: check_overrides(in, g, pool); break;
      case 4: edit(in, *pool[in.ConsumeIntegralInRange<std::size_t>(0, pool.size() - 1)]); break;
      case 5:
        if (dynamic) {
          round_trip_kernel_cache(g);
        }
        break;
      default: add_node(in, g, other, pool); break;
    }
  }
  if (dynamic) {
    round_trip_kernel_cache(g);  // every dynamic graph once, as it ends
  }
  return 0;
}
