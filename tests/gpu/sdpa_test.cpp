// Attention (sdpa) on the GPU against a CPU reference in double: odd sequence lengths (17, 33),
// head dims 64 and 128, causal masks of both diagonal alignments, padding masks from per-batch
// lengths, grouped-query attention, BFloat16 and Half, inference (O) and training (O and Stats).
// A graph cuDNN has no engine for is a finding (skipped with the Error), never a pass. Then one
// dynamic-shape graph on a KernelCache, refused at build (known issue sdpa-dynamic-shape).
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::Graph;
using dnngraph::SdpaAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::o_tolerance;
using dnngraph::test::repack;
using dnngraph::test::require_cuda;
using dnngraph::test::SdpaCase;
using dnngraph::test::starts;
using dnngraph::test::stats_tolerance;
using dnngraph::test::token_major;
using dnngraph::test::valid_rows;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_stats = 5, uid_len_q = 6,
                       uid_len_kv = 7, uid_bias = 20, uid_slopes = 21;

Graph make_graph(const SdpaCase& c, const std::shared_ptr<dnngraph::KernelCache>& cache = {}) {
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  if (cache) {
    g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  }
  auto q = g.tensor(TensorAttributes().set_name("Q").set_uid(uid_q).set_dim(c.q_dims()));
  auto k = g.tensor(TensorAttributes().set_name("K").set_uid(uid_k).set_dim(c.kv_dims()));
  auto v = g.tensor(TensorAttributes().set_name("V").set_uid(uid_v).set_dim(c.kv_dims()));
  SdpaAttributes a;
  a.set_name("attn").set_attn_scale(c.scale()).set_generate_stats(c.stats);
  dnngraph::test::set_masks(c, g, a, uid_len_q, uid_len_kv);
  if (c.bias_heads != 0) {
    a.set_bias(g.tensor(TensorAttributes().set_name("bias").set_uid(uid_bias).set_dim(
        dnngraph::test::bias_dims(c))));
  }
  if (c.window) {
    a.set_sliding_window_length(*c.window);
  }
  if (c.alibi) {
    a.set_alibi_mask(true).set_alibi_slopes(g.tensor(TensorAttributes()
                                                         .set_name("slopes")
                                                         .set_uid(uid_slopes)
                                                         .set_dim({1, c.h_q, 1, 1})
                                                         .set_data_type(DataType::Float)));
  }
  auto [o, stats] = g.sdpa(q, k, v, a);
  o->set_name("O").set_uid(uid_o).set_output(true);
  if (stats) {
    stats->set_name("Stats").set_uid(uid_stats).set_output(true);
  }
  return g;
}

struct Errors {
  dnngraph::test::Comparison o, stats;
};

// Runs a built graph once on inputs uniform in [-1, 1] and compares O (and Stats) with the
// reference on the valid rows. Every output byte starts as NaN. With `overrides`, c's dims are
// given as execute-time shapes of Q, K, V, O (and Stats), packed, for a graph built on others;
// Stats' rows are then padded to a multiple of 4 Floats (16 bytes): the plan was built with
// 16-byte aligned rows, and an override that breaks that is refused (docs/override-shapes.md).
Errors run_and_compare(const SdpaCase& c, const Graph& g, const dnngraph::Handle& handle,
                       bool overrides = false) {
  std::mt19937 rng(c.seed);
  const auto count = [](const Dims& d) { return dnngraph::test::element_count(d); };
  const HostTensor q = dnngraph::test::random_tensor(c.type, count(c.q_dims()), rng);
  const HostTensor k = dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng);
  const HostTensor v = dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng);
  // Drawn only for a case with a bias, so the other cases keep their inputs.
  const HostTensor bias = c.bias_heads != 0 ? dnngraph::test::random_tensor(
                                                  c.type, count(dnngraph::test::bias_dims(c)), rng)
                                            : HostTensor{};
  const dnngraph::test::SdpaExpected e =
      dnngraph::test::sdpa_reference(c, q.values, k.values, v.values, bias.values);
  const std::size_t rows = e.row_valid.size();
  std::vector<std::byte> o_bytes(e.o.size() * static_cast<std::size_t>(dnngraph::size_of(c.type)));
  const std::int64_t stats_row = overrides ? (c.s_q + 3) / 4 * 4 : c.s_q;
  const auto stats_count = static_cast<std::size_t>(c.b * c.h_q * stats_row);
  std::vector<float> stats_padded(stats_count);

  DeviceBuffer q_dev = require_cuda(DeviceBuffer::copy_of(q.bytes), "Q");
  DeviceBuffer k_dev = require_cuda(DeviceBuffer::copy_of(k.bytes), "K");
  DeviceBuffer v_dev = require_cuda(DeviceBuffer::copy_of(v.bytes), "V");
  DeviceBuffer o_dev = require_cuda(DeviceBuffer::allocate(o_bytes.size()), "O");
  DeviceBuffer stats_dev =
      require_cuda(DeviceBuffer::allocate(stats_count * sizeof(float)), "Stats");
  require_cuda(o_dev.fill_bytes(0xFF), "fill O");
  require_cuda(stats_dev.fill_bytes(0xFF), "fill Stats");
  const std::vector<std::int32_t> len_q = c.padded() ? c.len_q : std::vector<std::int32_t>{1};
  const std::vector<std::int32_t> len_kv = c.padded() ? c.len_kv : std::vector<std::int32_t>{1};
  DeviceBuffer len_q_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const std::int32_t>(len_q)), "seq_len_q");
  DeviceBuffer len_kv_dev =
      require_cuda(DeviceBuffer::copy_of(std::span<const std::int32_t>(len_kv)), "seq_len_kv");
  std::vector<std::int64_t> uids{uid_q, uid_k, uid_v, uid_o};
  std::vector<Dims> shapes{c.q_dims(), c.kv_dims(), c.kv_dims(), c.q_dims()};
  if (c.padded()) {
    uids.insert(uids.end(), {uid_len_q, uid_len_kv});
    shapes.insert(shapes.end(), 2, Dims{c.b, 1, 1, 1});
  }
  std::vector<Dims> strides;
  strides.reserve(shapes.size() + 1);
  for (const Dims& shape : shapes) {
    strides.push_back(dnngraph::packed_strides(shape));
  }
  if (c.stats) {
    uids.push_back(uid_stats);
    shapes.push_back({c.b, c.h_q, c.s_q, 1});
    strides.push_back({c.h_q * stats_row, stats_row, 1, 1});
  }
  const auto workspace_size =
      overrides ? g.get_workspace_size(handle, uids, shapes, strides) : g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(workspace_size.has_value(), "workspace: " << describe(workspace_size));
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(*workspace_size, 1))),
      "workspace");
  std::unordered_map<std::int64_t, void*> pack{
      {uid_q, q_dev.get()}, {uid_k, k_dev.get()}, {uid_v, v_dev.get()}, {uid_o, o_dev.get()}};
  if (c.stats) {
    pack[uid_stats] = stats_dev.get();
  }
  if (c.padded()) {
    pack[uid_len_q] = len_q_dev.get();
    pack[uid_len_kv] = len_kv_dev.get();
  }
  DeviceBuffer bias_dev;
  if (c.bias_heads != 0) {
    bias_dev = require_cuda(DeviceBuffer::copy_of(bias.bytes), "bias");
    pack[uid_bias] = bias_dev.get();
  }
  DeviceBuffer slopes_dev;
  if (c.alibi) {
    const std::vector<float> slopes = dnngraph::alibi_slopes(c.h_q);
    slopes_dev = require_cuda(DeviceBuffer::copy_of(std::span<const float>(slopes)), "slopes");
    pack[uid_slopes] = slopes_dev.get();
  }
  const auto ran = overrides ? g.execute(handle, pack, workspace.get(), uids, shapes, strides)
                             : g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(o_dev.download(std::span<std::byte>(o_bytes)), "O");
  require_cuda(stats_dev.download(std::span<float>(stats_padded)), "Stats");
  std::vector<float> stats(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = static_cast<std::size_t>(c.s_q);
    stats[r] = stats_padded[(r / row) * static_cast<std::size_t>(stats_row) + r % row];
  }

  const std::vector<float> o_got = dnngraph::test::decode(c.type, o_bytes);
  const auto per_row = static_cast<std::size_t>(c.d);
  Errors errors;
  errors.o = dnngraph::test::compare(
      valid_rows(std::span<const float>(o_got), e.row_valid, per_row),
      valid_rows(std::span<const double>(e.o), e.row_valid, per_row), o_tolerance(c.type));
  if (c.stats) {
    errors.stats = dnngraph::test::compare(
        valid_rows(std::span<const float>(stats), e.row_valid, 1),
        valid_rows(std::span<const double>(e.stats), e.row_valid, 1), stats_tolerance);
  }
  return errors;
}

boost::unit_test::precondition builds(const SdpaCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

// Builds c's graph with `make` (or takes the one its precondition built), runs it with `run`
// and checks O (and Stats) against the reference.
template <class Make, class Run>
void check_case(const SdpaCase& c, const Make& make, const Run& run) {
  const auto taken = dnngraph::test::take_case(c.text(), [c, make] { return make(c); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), c.text() << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
  BOOST_REQUIRE(b.handle.has_value());
  const Errors errors = run(c, b.graph, *b.handle);
  BOOST_TEST_MESSAGE(c.text() << ": O " << errors.o.describe()
                              << (c.stats ? "; Stats " + errors.stats.describe() : std::string())
                              << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(errors.o.passed(), c.text() << ": O " << errors.o.describe());
  if (c.stats) {
    BOOST_CHECK_MESSAGE(errors.stats.passed(), c.text() << ": Stats " << errors.stats.describe());
  }
}

void check_against_reference(const SdpaCase& c) {
  check_case(
      c, [](const SdpaCase& x) { return make_graph(x); },
      [](const SdpaCase& x, const Graph& g, const dnngraph::Handle& h) {
        return run_and_compare(x, g, h);
      });
}

namespace cases {
const auto bf16 = DataType::BFloat16;
const auto half = DataType::Half;
const auto top_left = DiagonalAlignment::TopLeft;
const auto bottom_right = DiagonalAlignment::BottomRight;
const SdpaCase plain_bf16_d64{
    "no mask, inference", bf16, 2, 4, 4, 17, 33, 64, {}, false, {}, {}, 1301};
const SdpaCase plain_half_d128_stats{
    "no mask, training", half, 2, 4, 4, 33, 17, 128, {}, true, {}, {}, 1302};
const SdpaCase causal_top_left_half{
    "causal top-left, training", half, 2, 4, 4, 33, 33, 64, top_left, true, {}, {}, 1303};
const SdpaCase causal_top_left_bf16_d128{
    "causal top-left, inference", bf16, 1, 4, 4, 17, 33, 128, top_left, false, {}, {}, 1304};
// Bottom-right without a padding mask is refused unless s_q == s_kv: full lengths here.
const SdpaCase causal_bottom_right_bf16{"causal bottom-right with full lengths, training",
                                        bf16,
                                        2,
                                        4,
                                        4,
                                        17,
                                        33,
                                        128,
                                        bottom_right,
                                        true,
                                        {17, 17},
                                        {33, 33},
                                        1305};
const SdpaCase causal_bottom_right_half_square{
    "causal bottom-right, inference", half, 1, 2, 2, 33, 33, 64, bottom_right, false, {}, {}, 1306};
const SdpaCase padded_half{"padding, training", half,        3,   2, 2, 33, 33, 64, {}, true,
                           {33, 17, 5},         {33, 20, 9}, 1307};
const SdpaCase padded_bf16_d128{
    "padding, inference", bf16, 2, 2, 2, 17, 33, 128, {}, false, {9, 17}, {33, 1}, 1308};
const SdpaCase padded_causal_bottom_right_half{"padding and causal bottom-right, training",
                                               half,
                                               2,
                                               4,
                                               4,
                                               33,
                                               33,
                                               64,
                                               bottom_right,
                                               true,
                                               {17, 33},
                                               {33, 20},
                                               1309};
const SdpaCase gqa_causal_bf16{"grouped-query (4:1), causal top-left, training",
                               bf16,
                               2,
                               8,
                               2,
                               33,
                               33,
                               64,
                               top_left,
                               true,
                               {},
                               {},
                               1310};
const SdpaCase mqa_half_d128{"multi-query (4:1 to one head), inference",
                             half,
                             1,
                             4,
                             1,
                             17,
                             33,
                             128,
                             {},
                             false,
                             {},
                             {},
                             1311};
// Score modifiers (b 2, h 4): a bias uniform in [-1, 1] of every head or shared by them, a
// sliding window on the top-left causal mask, and both, at odd lengths.
// b 2, h_q 4, training, a causal top-left mask unless `causal` is false.
SdpaCase modified(const char* name, DataType type, std::array<std::int64_t, 4> h_k_s_q_s_kv_d,
                  std::int64_t bias_heads, std::optional<std::int64_t> window, std::uint32_t seed,
                  bool causal = true, bool alibi = false) {
  const auto [h_k, s_q, s_kv, d] = h_k_s_q_s_kv_d;
  SdpaCase c{name, type, 2, 4, h_k, s_q, s_kv, d, std::nullopt, true, {}, {}, seed};
  if (causal) {
    c.causal = top_left;
  }
  return dnngraph::test::with_modifiers(c, bias_heads, window, alibi);
}
const SdpaCase bias_half =
    modified("bias of every head, causal top-left", half, {4, 97, 97, 64}, 4, {}, 3101);
const SdpaCase shared_bias_bf16 =
    modified("bias shared by the heads", bf16, {4, 64, 300, 128}, 1, {}, 3102, false);
const SdpaCase window_bf16 = modified("sliding window", bf16, {4, 257, 257, 64}, 0, 64, 3103);
const SdpaCase alibi_half = modified("ALiBi", half, {4, 150, 150, 64}, 0, {}, 3105, true, true);
const SdpaCase alibi_bias_window_bf16 = modified("grouped-query (2:1), ALiBi, bias and window",
                                                 bf16, {2, 96, 160, 128}, 4, 40, 3106, true, true);
const SdpaCase window_bias_half =
    modified("grouped-query (2:1), sliding window and bias", half, {2, 131, 200, 128}, 4, 17, 3104);
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_forward)
DNNGRAPH_REFERENCE_CASE(bfloat16_head_dim_64_without_mask_matches_reference, cases::plain_bf16_d64)
DNNGRAPH_REFERENCE_CASE(half_head_dim_128_training_matches_reference, cases::plain_half_d128_stats)
DNNGRAPH_REFERENCE_CASE(half_causal_top_left_training_matches_reference,
                        cases::causal_top_left_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_head_dim_128_causal_top_left_matches_reference,
                        cases::causal_top_left_bf16_d128)
DNNGRAPH_REFERENCE_CASE(bfloat16_causal_bottom_right_training_matches_reference,
                        cases::causal_bottom_right_bf16)
DNNGRAPH_REFERENCE_CASE(half_causal_bottom_right_square_matches_reference,
                        cases::causal_bottom_right_half_square)
DNNGRAPH_REFERENCE_CASE(half_padding_mask_training_matches_reference, cases::padded_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_head_dim_128_padding_mask_matches_reference,
                        cases::padded_bf16_d128)
DNNGRAPH_REFERENCE_CASE(half_padding_with_causal_bottom_right_matches_reference,
                        cases::padded_causal_bottom_right_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_grouped_query_causal_training_matches_reference,
                        cases::gqa_causal_bf16)
DNNGRAPH_REFERENCE_CASE(half_multi_query_head_dim_128_matches_reference, cases::mqa_half_d128)
DNNGRAPH_REFERENCE_CASE(half_bias_matches_reference, cases::bias_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_shared_bias_matches_reference, cases::shared_bias_bf16)
DNNGRAPH_REFERENCE_CASE(bfloat16_sliding_window_matches_reference, cases::window_bf16)
DNNGRAPH_REFERENCE_CASE(half_window_and_bias_matches_reference, cases::window_bias_half)
DNNGRAPH_REFERENCE_CASE(half_alibi_matches_reference, cases::alibi_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_alibi_bias_window_match_reference, cases::alibi_bias_window_bf16)
BOOST_AUTO_TEST_SUITE_END()

namespace {

constexpr std::int64_t uid_q_offsets = 8, uid_kv_offsets = 9;

// c's graph with Q, K, V and O packed token after token ("THD": no padding in memory), each with
// ragged offsets (Int32, in elements); the padding mask's length tensors give the lengths. With
// `overrides`, built with the override-shape flag.
Graph make_ragged_graph(const SdpaCase& c, bool overrides = false) {
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(overrides);
  auto offsets = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({c.b + 1, 1, 1, 1})
                        .set_data_type(DataType::Int32));
  };
  auto q_offsets = offsets("q_offsets", uid_q_offsets);
  auto kv_offsets = offsets("kv_offsets", uid_kv_offsets);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims,
                         const std::shared_ptr<TensorAttributes>& ragged) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(dims)
                        .set_stride(token_major(dims))
                        .set_ragged_offset(ragged));
  };
  auto q = input("Q", uid_q, c.q_dims(), q_offsets);
  auto k = input("K", uid_k, c.kv_dims(), kv_offsets);
  auto v = input("V", uid_v, c.kv_dims(), kv_offsets);
  SdpaAttributes a;
  a.set_name("attn").set_attn_scale(c.scale()).set_generate_stats(c.stats);
  dnngraph::test::set_masks(c, g, a, uid_len_q, uid_len_kv);  // every ragged case has lengths
  auto [o, stats] = g.sdpa(q, k, v, a);
  o->set_name("O").set_uid(uid_o).set_output(true).set_stride(token_major(c.q_dims()));
  o->set_ragged_offset(q_offsets);
  if (stats) {
    stats->set_name("Stats").set_uid(uid_stats).set_output(true);
  }
  return g;
}

// Runs c packed (THD) and compares O (and Stats) with the reference of the same tokens padded.
// With `overrides`, g was built at another s_q: Q and O are overridden to c's.
Errors run_ragged(const SdpaCase& c, const Graph& g, const dnngraph::Handle& handle,
                  bool overrides = false) {
  std::mt19937 rng(c.seed);
  const auto tokens_q = static_cast<std::size_t>(starts(c.len_q).back());
  const auto tokens_kv = static_cast<std::size_t>(starts(c.len_kv).back());
  const auto d = static_cast<std::size_t>(c.d);
  const HostTensor q = dnngraph::test::random_tensor(c.type, tokens_q * c.h_q * d, rng);
  const HostTensor k = dnngraph::test::random_tensor(c.type, tokens_kv * c.h_k * d, rng);
  const HostTensor v = dnngraph::test::random_tensor(c.type, tokens_kv * c.h_k * d, rng);
  const auto count = [](const Dims& dims) { return dnngraph::test::element_count(dims); };
  std::vector<float> q_pad(count(c.q_dims())), k_pad(count(c.kv_dims())), v_pad(count(c.kv_dims()));
  repack(c, c.h_q, c.s_q, c.len_q, false, q.values, q_pad);
  repack(c, c.h_k, c.s_kv, c.len_kv, false, k.values, k_pad);
  repack(c, c.h_k, c.s_kv, c.len_kv, false, v.values, v_pad);
  const dnngraph::test::SdpaExpected e = dnngraph::test::sdpa_reference(c, q_pad, k_pad, v_pad);
  const std::size_t rows = e.row_valid.size();
  std::vector<std::byte> o_bytes(tokens_q * c.h_q * d *
                                 static_cast<std::size_t>(dnngraph::size_of(c.type)));
  std::vector<float> stats(rows);
  DeviceBuffer q_dev = require_cuda(DeviceBuffer::copy_of(q.bytes), "Q");
  DeviceBuffer k_dev = require_cuda(DeviceBuffer::copy_of(k.bytes), "K");
  DeviceBuffer v_dev = require_cuda(DeviceBuffer::copy_of(v.bytes), "V");
  DeviceBuffer o_dev = require_cuda(DeviceBuffer::allocate(o_bytes.size()), "O");
  DeviceBuffer stats_dev = require_cuda(DeviceBuffer::allocate(rows * sizeof(float)), "Stats");
  require_cuda(o_dev.fill_bytes(0xFF), "fill O");
  require_cuda(stats_dev.fill_bytes(0xFF), "fill Stats");
  const auto offsets = [&](const std::vector<std::int32_t>& lengths, std::int64_t h) {
    std::vector<std::int32_t> values;
    for (const std::int64_t first : starts(lengths)) {
      values.push_back(static_cast<std::int32_t>(first * h * c.d));
    }
    return values;
  };
  const std::vector<std::int32_t> q_offsets = offsets(c.len_q, c.h_q);
  const std::vector<std::int32_t> kv_offsets = offsets(c.len_kv, c.h_k);
  const auto upload = [](const std::vector<std::int32_t>& values, const char* what) {
    return require_cuda(DeviceBuffer::copy_of(std::span<const std::int32_t>(values)), what);
  };
  DeviceBuffer q_offsets_dev = upload(q_offsets, "q offsets");
  DeviceBuffer kv_offsets_dev = upload(kv_offsets, "kv offsets");
  DeviceBuffer len_q_dev = upload(c.len_q, "seq_len_q");
  DeviceBuffer len_kv_dev = upload(c.len_kv, "seq_len_kv");
  const std::vector<std::int64_t> uids{uid_q, uid_o};
  const std::vector<Dims> shapes{c.q_dims(), c.q_dims()};
  const std::vector<Dims> strides{token_major(c.q_dims()), token_major(c.q_dims())};
  const auto workspace_size =
      overrides ? g.get_workspace_size(handle, uids, shapes, strides) : g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(workspace_size.has_value(), "workspace: " << describe(workspace_size));
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(*workspace_size, 1))),
      "workspace");
  std::unordered_map<std::int64_t, void*> pack{{uid_q, q_dev.get()},
                                               {uid_k, k_dev.get()},
                                               {uid_v, v_dev.get()},
                                               {uid_o, o_dev.get()},
                                               {uid_len_q, len_q_dev.get()},
                                               {uid_len_kv, len_kv_dev.get()},
                                               {uid_q_offsets, q_offsets_dev.get()},
                                               {uid_kv_offsets, kv_offsets_dev.get()}};
  if (c.stats) {
    pack[uid_stats] = stats_dev.get();
  }
  const auto ran = overrides ? g.execute(handle, pack, workspace.get(), uids, shapes, strides)
                             : g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(o_dev.download(std::span<std::byte>(o_bytes)), "O");
  require_cuda(stats_dev.download(std::span<float>(stats)), "Stats");
  const std::vector<float> o_packed = dnngraph::test::decode(c.type, o_bytes);
  std::vector<float> o_got(e.o.size(), 0.0F);
  repack(c, c.h_q, c.s_q, c.len_q, false, o_packed, o_got);
  Errors errors;
  errors.o = dnngraph::test::compare(valid_rows(std::span<const float>(o_got), e.row_valid, d),
                                     valid_rows(std::span<const double>(e.o), e.row_valid, d),
                                     o_tolerance(c.type));
  if (c.stats) {
    errors.stats = dnngraph::test::compare(
        valid_rows(std::span<const float>(stats), e.row_valid, 1),
        valid_rows(std::span<const double>(e.stats), e.row_valid, 1), stats_tolerance);
  }
  return errors;
}

void check_ragged(const SdpaCase& c) {
  check_case(
      c, [](const SdpaCase& x) { return make_ragged_graph(x); },
      [](const SdpaCase& x, const Graph& g, const dnngraph::Handle& handle) {
        return run_ragged(x, g, handle);
      });
}

boost::unit_test::precondition ragged_builds(const SdpaCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_ragged_graph(c); });
}

namespace ragged_cases {
const SdpaCase bf16_inference{"THD packed, no mask, inference",
                              DataType::BFloat16,
                              3,
                              4,
                              4,
                              64,
                              64,
                              128,
                              std::nullopt,
                              false,
                              {64, 17, 33},
                              {50, 64, 9},
                              1501};
const SdpaCase half_gqa_causal_training{"THD packed, GQA 4:1, causal bottom-right, training",
                                        DataType::Half,
                                        3,
                                        8,
                                        2,
                                        64,
                                        64,
                                        64,
                                        DiagonalAlignment::BottomRight,
                                        true,
                                        {31, 64, 1},
                                        {40, 64, 16},
                                        1502};
}  // namespace ragged_cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_ragged_matches_reference)
BOOST_AUTO_TEST_CASE(thd_packed_inference_matches_reference,
                     *ragged_builds(ragged_cases::bf16_inference)) {
  check_ragged(ragged_cases::bf16_inference);
}
BOOST_AUTO_TEST_CASE(thd_packed_gqa_causal_training_matches_reference,
                     *ragged_builds(ragged_cases::half_gqa_causal_training)) {
  check_ragged(ragged_cases::half_gqa_causal_training);
}
BOOST_AUTO_TEST_SUITE_END()

namespace {

// One topology (Half, causal top-left, training, d 64) at one sequence length.
SdpaCase dynamic_case(std::int64_t s) {
  return {"dynamic, causal top-left",
          DataType::Half,
          2,
          4,
          4,
          s,
          s,
          64,
          DiagonalAlignment::TopLeft,
          true,
          {},
          {},
          static_cast<std::uint32_t>(1400 + s)};
}

}  // namespace

// Known issue sdpa-dynamic-shape: on cuDNN 9.19 the dynamic graph built at length 64 ran exact,
// and the same topology at lengths 17, 33, 128 and 200, served from the kernel cache, returned
// success with NaN rows; 9.27 offered no engine. Until a cuDNN is measured exact, build() refuses.
BOOST_AUTO_TEST_CASE(a_dynamic_shape_sdpa_graph_is_refused_at_build_never_run_wrong) {
  auto cache = std::make_shared<dnngraph::KernelCache>();
  auto handle = dnngraph::Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(), describe(handle));
  for (const std::int64_t s : {64, 17}) {
    const SdpaCase c = dynamic_case(s);
    auto g = make_graph(c, cache);
    const auto built =
        g.build(*handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback});
    BOOST_TEST_MESSAGE(c.text() << ": " << describe(built));
    BOOST_TEST_REQUIRE(!built.has_value());
    BOOST_TEST((built.error().code == dnngraph::ErrorCode::NoEngine));
    BOOST_TEST(cache->size().value_or(-1) <= 0);  // nothing was compiled into the cache
  }
}

namespace {

// A topology the override route is tested on, and its case at one batch and query length.
struct OverrideTopology {
  std::string name;
  DataType type;
  std::int64_t h_q, h_k, d;
  std::optional<DiagonalAlignment> causal;
  bool stats;
  bool padded;           // a padding mask, lengths per batch below the dims
  std::int64_t kv_more;  // s_kv = s_q + kv_more

  [[nodiscard]] SdpaCase at(std::int64_t b, std::int64_t s) const {
    SdpaCase c{name + " at b " + std::to_string(b) + " s " + std::to_string(s),
               type,
               b,
               h_q,
               h_k,
               s,
               s + kv_more,
               d,
               causal,
               stats,
               {},
               {},
               static_cast<std::uint32_t>(1700 + b * 1000 + s)};
    for (std::int64_t i = 0; padded && i < b; ++i) {
      c.len_q.push_back(static_cast<std::int32_t>(std::max<std::int64_t>(1, s - i * s / 3)));
      c.len_kv.push_back(
          static_cast<std::int32_t>(std::max<std::int64_t>(1, c.s_kv - i * c.s_kv / 4)));
    }
    return c;
  }
};

}  // namespace

// The override route: one graph built on the longest length (the cache shape), run at each
// request's batch and length through execute-time shapes, for the fused forms users run
// (causal training, GQA inference, a padded variable-length batch with a bottom-right mask)
// and each heuristics mode. Every cuDNN must either refuse at build or run every shape exact:
// never a wrong number, never a failure at execute. Below 9.21 sdpa is not proven on the
// dynamic-graph path overrides take there (VersionTooOld). On cuDNN 9.27 the flagged graph built
// and ran exact at its build shape, and returned wrong numbers at every other length (as did
// cudnn-frontend 1.32's own SDPA, bench/sdpa_frontend_probe.cpp): build() answers NoEngine
// naming known issue sdpa-override-shapes until a cuDNN is measured exact here.
BOOST_AUTO_TEST_CASE(an_override_shape_sdpa_graph_runs_every_length_exact_or_is_refused) {
  auto handle = dnngraph::Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(), describe(handle));
  const std::int64_t loaded = dnngraph::cudnn_runtime_version();
  const std::vector<OverrideTopology> topologies{
      {"causal top-left, training", DataType::Half, 4, 4, 64, DiagonalAlignment::TopLeft, true,
       false, 0},
      {"GQA, no mask, inference", DataType::BFloat16, 8, 2, 128, std::nullopt, false, false, 0},
      {"padding + causal bottom-right, training", DataType::Half, 4, 2, 64,
       DiagonalAlignment::BottomRight, true, true, 16},
  };
  // (b, s): the build shape first, then shorter, odd and single-token lengths and other batches.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{
      {3, 128}, {3, 17}, {2, 33}, {1, 64}, {3, 100}, {2, 1}, {3, 127}, {1, 8}, {2, 128}};
  for (const OverrideTopology& topology : topologies) {
    for (const auto mode : {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}) {
      const SdpaCase built_on = topology.at(shapes.front().first, shapes.front().second);
      Graph g = make_graph(built_on);
      g.set_override_shape_enabled(true);
      const auto built = g.build(*handle, {mode});
      const std::string where = topology.name + ", heuristics " +
                                std::string(dnngraph::to_string(mode)) + ", cuDNN " +
                                std::to_string(loaded);
      BOOST_TEST_MESSAGE(where << ": build " << describe(built));
      if (!built) {
        const dnngraph::ErrorCode code = built.error().code;
        BOOST_TEST(
            (code == dnngraph::ErrorCode::VersionTooOld || code == dnngraph::ErrorCode::NoEngine),
            where << ": " << describe(built));
        // From 9.21 every config the heuristics offer is refused naming the known issue; a
        // mode that offers none (Fallback on 9.27) says so.
        const std::string& message = built.error().message;
        BOOST_TEST((loaded < 92100 || (code == dnngraph::ErrorCode::NoEngine &&
                                       (message.find("sdpa-override-shapes") != std::string::npos ||
                                        message.find("no engine config") != std::string::npos))),
                   where << ": " << describe(built));
        continue;
      }
      const auto info = g.plan_info();
      BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
      for (const auto& [b, s] : shapes) {
        const SdpaCase c = topology.at(b, s);
        const Errors errors = run_and_compare(c, g, *handle, /*overrides=*/true);
        BOOST_TEST_MESSAGE(where << ", " << c.text() << ": O " << errors.o.describe()
                                 << (c.stats ? "; Stats " + errors.stats.describe() : "")
                                 << "; plan: " << info->describe());
        BOOST_CHECK_MESSAGE(errors.o.passed(),
                            where << ", " << c.text() << ": O " << errors.o.describe());
        if (c.stats) {
          BOOST_CHECK_MESSAGE(errors.stats.passed(),
                              where << ", " << c.text() << ": Stats " << errors.stats.describe());
        }
      }
    }
  }
}

// The override route in the one form cuDNN runs exact (known issue sdpa-override-shapes; found
// with cudnn-frontend 1.32's own SDPA on cuDNN 9.28.1, the form its own override test takes): Q
// and O packed token after token, a padding mask, inference. One graph per topology and
// heuristics mode, built with s_q 128 and K/V at 160 tokens per sequence, then run at nine
// batches of requests whose longest query is 2 to 200 tokens (longer than the build too), each
// through overrides of Q's and O's sequence dim only, against the CPU reference; no build after
// the first. One query token is refused by execute() before cuDNN (which answers
// NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE). Below 9.21 there is no override flag and sdpa is not
// served on the dynamic-graph path: build() refuses.
BOOST_AUTO_TEST_CASE(the_ragged_override_form_runs_every_query_length_exact) {
  auto handle = dnngraph::Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(), describe(handle));
  const std::int64_t loaded = dnngraph::cudnn_runtime_version();
  struct Topology {
    std::string name;
    DataType type;
    std::int64_t h_q, h_k, d;
    std::optional<DiagonalAlignment> causal;
  };
  const std::vector<Topology> topologies{
      {"THD override, no mask", DataType::Half, 4, 4, 64, std::nullopt},
      {"THD override, GQA 8:2, causal top-left", DataType::BFloat16, 8, 2, 128,
       DiagonalAlignment::TopLeft},
  };
  constexpr std::int64_t b = 3, build_s_q = 128, s_kv = 160;
  const auto at = [&](const Topology& t, std::int64_t longest) {
    SdpaCase c{t.name + ", longest query " + std::to_string(longest),
               t.type,
               b,
               t.h_q,
               t.h_k,
               longest,
               s_kv,
               t.d,
               t.causal,
               false,
               {},
               {},
               static_cast<std::uint32_t>(2100 + longest)};
    c.len_q = {static_cast<std::int32_t>(longest),
               static_cast<std::int32_t>(std::max<std::int64_t>(1, longest / 2)),
               static_cast<std::int32_t>(std::max<std::int64_t>(1, longest / 3 + 1))};
    c.len_kv = {static_cast<std::int32_t>(s_kv), 77,
                static_cast<std::int32_t>(std::min(s_kv, longest + 5))};
    return c;
  };
  const std::vector<std::int64_t> longest{128, 17, 64, 2, 100, 33, 127, 200, 9};
  for (const Topology& topology : topologies) {
    for (const auto mode : {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}) {
      const SdpaCase built_on = at(topology, build_s_q);
      Graph g = make_ragged_graph(built_on, /*overrides=*/true);
      const auto built = g.build(*handle, {mode});
      const std::string where = topology.name + ", heuristics " +
                                std::string(dnngraph::to_string(mode)) + ", cuDNN " +
                                std::to_string(loaded);
      BOOST_TEST_MESSAGE(where << ": build " << describe(built));
      if (loaded < 92100) {
        BOOST_TEST(!built.has_value(), where << ": built below 9.21");
        continue;
      }
      if (!built && mode == dnngraph::HeuristicMode::Fallback &&
          built.error().code == dnngraph::ErrorCode::NoEngine &&
          built.error().message.find("sdpa-override-shapes") == std::string::npos) {
        BOOST_TEST_MESSAGE(where << ": finding: Fallback offers no engine config: "
                                 << built.error().message);
        continue;
      }
      BOOST_REQUIRE_MESSAGE(built.has_value(), where << ": build failed: " << describe(built));
      const auto info = g.plan_info();
      BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
      for (const std::int64_t s : longest) {
        const SdpaCase c = at(topology, s);
        const Errors errors = run_ragged(c, g, *handle, /*overrides=*/true);
        BOOST_TEST_MESSAGE(where << ", " << c.text() << ": O " << errors.o.describe()
                                 << "; plan: " << info->describe());
        BOOST_CHECK_MESSAGE(errors.o.passed(),
                            where << ", " << c.text() << ": O " << errors.o.describe());
      }
      const SdpaCase one = at(topology, 1);
      const std::vector<Dims> shapes{one.q_dims(), one.q_dims()};
      const std::vector<Dims> strides{token_major(one.q_dims()), token_major(one.q_dims())};
      const std::vector<std::int64_t> uids{uid_q, uid_o};
      const auto refused = g.get_workspace_size(*handle, uids, shapes, strides);
      BOOST_TEST(!refused.has_value(), where << ": one query token accepted");
      BOOST_TEST((refused ? std::string() : refused.error().message).find("one query token") !=
                     std::string::npos,
                 where << ": " << describe(refused));
    }
  }
}
