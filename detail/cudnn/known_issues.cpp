// The table of known cuDNN defects. Each entry's text says where and how it was measured; the
// details of each measurement are in docs/known-issues.md.
#include "detail/cudnn/known_issues.hpp"

#include "backend/features.hpp"
#include "backend/version.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace dnngraph::detail {

namespace {

// cuDNN 9.27.0 on the H200 (runtime-fusion libraries): conv_fprop with channels-first X through
// engine 7 with a workspace wrote wrong numbers and returned success — NCHW [3,5,13,11] *
// [7,5,3,5]: 2,984 of 3,003 outputs wrong (KERNEL_CFG 29, 6,134 B); NCDHW 3x3x3: 16,298 of
// 16,384 (KERNEL_CFG 26, 32,896 B). cudnn-frontend 1.32 on the same libraries: the same. The
// channels-last twins ran exact through engine 7 without a workspace. On 9.19 heuristics chose
// engines 28 and 47 (exact); engine 7 there is unmeasured, so the entry holds for every version.
bool engine7_channels_first_conv(const GraphTraits& graph, const Candidate& candidate) {
  // With override shapes the workspace of a later shape is unknown here: refuse engine 7 outright.
  return graph.channels_first_conv_fprop && candidate.choice.engine_id == 7 &&
         (candidate.workspace > 0 || graph.override_shapes);
}

// cuDNN 9.28.1 on the H200 (runtime-compiled and heuristic libraries): every candidate heuristics
// A and Fallback offered for channels-first convolutions was engine 4 with a workspace, and for
// x [1 or 2, 16, 9, 9] * w [24, 16, 3, 3], padding 1, all of them (7-10 knob settings each) wrote
// wrong numbers for conv_fprop, conv_dgrad and conv_wgrad alike (errors 14 to 1e20, unwritten
// memory); x [4, 32, 17, 13] * w [48, 32, 3, 3] stride 2 and [8, 64, 28, 28] * [64, 64, 3, 3]
// ran exact through the same engine (python/bench/conv_nchw_probe.py). The channels-last twins
// ran exact through engines 1, 2, 4, 7 and 8. On 9.19 the same small case ran exact (the
// dnngraph.torch NCHW tests); 9.27 is unmeasured for engine 4 and had channels-first conv_fprop
// wrong through engine 7, so the entry holds from 9.27 on.
bool engine4_channels_first_conv(const GraphTraits& graph, const Candidate& candidate) {
  return graph.channels_first_conv && candidate.choice.engine_id == 4 &&
         (candidate.workspace > 0 || graph.override_shapes);
}

// cuDNN 9.19.0 and 9.27.0 on the H200: an rng node outside attention (a Bernoulli mask alone, or
// a matmul's dropout) got no engine config; cudnn-frontend 1.32's own rng node the same
// (bench/rng_frontend_probe.cpp). Inside attention cuDNN serves it (sdpa dropout).
bool rng_outside_attention(const GraphTraits& graph) { return graph.rng && !graph.sdpa; }

// cuDNN 9.19.0 on the H200: a dynamic-shape sdpa graph (Half, causal top-left, training, d 64,
// b 2, h 4) built at length 64 on a KernelCache ran exact; the same topology at lengths 17, 33,
// 128 and 200 built from the cache in 5.6-6.1 ms (revision and size unchanged, engine 2) and
// returned NaN rows. cuDNN 9.27.0 offered no engine for the dynamic graph. cudnn-frontend 1.32's
// own SDPA on the same libraries: the same (bench/sdpa_frontend_probe.cpp).
bool sdpa_dynamic_shape(const GraphTraits& graph, const Candidate& /*candidate*/) {
  return graph.sdpa && graph.dynamic_shape;
}

// cuDNN 9.27.0 on the H200: an sdpa graph with the override-shape flag built at length 128 ran
// exact at 128, and at every other length (17, 33, 64, 100, 1) returned success with wrong
// numbers (O off by 1.1-1.2, NaN rows, Stats off by 4-5; Half causal training d 64; BF16 causal
// inference d 128 at 512-6000 against 8192 the same); cudnn-frontend 1.32's own SDPA with
// override shapes on the same libraries: the same (bench/sdpa_frontend_probe.cpp). cuDNN 9.28.1
// with cudnn-frontend 1.32 (session 10): the same for [b, h, s, d] and [b, s, h, d] layouts, with
// and without a padding mask, training and inference, composite and unified; exact (bit for bit
// against a static graph, lengths 17-200 on a graph built at 128) in the form cudnn-frontend's
// own override test takes: Q and O ragged (THD), a padding mask, inference, only Q's and O's
// sequence dim overridden. That form is not refused (SdpaNode::in_override_form).
bool sdpa_override_shapes(const GraphTraits& graph, const Candidate& /*candidate*/) {
  return graph.sdpa_outside_override_form && graph.override_shapes;
}

// cuDNN 9.19.0 on the H200 (session 19, python/tests/test_gpu_torch_ops.py
// test_a_dynamic_shape_norm_graph_probe, the graphs of dnngraph.torch's norms: one rmsnorm_backward
// node): a dynamic-shape rmsnorm backward built on a kernel cache at 64 rows and served at 17 ran
// exact, at 333 rows dScale was off by 25.8 (torch's own error 0.06); layernorm backward was exact
// at 64 and 17 and not reached at 333. cuDNN 9.28.1 ran both exact at 64, 17, 333 and 1 rows.
bool dynamic_row_norm_backward(const GraphTraits& graph, const Candidate& /*candidate*/) {
  return graph.row_norm_backward && graph.dynamic_shape;
}

// cuDNN 9.28.1 on the H200 (session 28): BFloat16 NHWC max pooling 2x2 stride 2 of [2, 16, 9, 11]
// and average pooling excluding padding 3x3 stride 2 padding 1 of [2, 8, 7, 9] returned success
// with 586 of 640 and 317 of 320 outputs wrong (values near 1e38) through the pooling engine
// without the TensorCore note: engine 3 (KERNEL_CFG 0, or no knobs), heuristics A's first, with
// every library of the wheel; engine 2 with the runtime-fusion libraries alone (the ids move with
// the libraries loaded; the notes do not). Every engine with the note (engine 2 with every
// library; engine 1, 5 knob settings, with the subset) ran both exact, and the Half twins ran
// exact through every engine. cudnn-frontend 1.32's own resample node, each candidate in turn:
// the same on 9.28.1, and on 9.19.0 (engine 3 wrong, engine 2 exact), where dnngraph still
// refuses BFloat16 pooling (resample-bfloat16-wrong) until its own run there is measured.
bool bfloat16_resample_without_tensor_core(const GraphTraits& graph, const Candidate& candidate) {
  return graph.bfloat16_resample &&
         std::ranges::find(candidate.numerical_notes, NumericalNote::TensorCore) ==
             candidate.numerical_notes.end();
}

constexpr std::array<KnownIssue, 21> table{{
    {Defect::Engine7ChannelsFirstConvFprop, "engine7-channels-first-conv-fprop", 0, 0, 92700, 92700,
     "conv_fprop with a channels-first (NCHW/NCDHW) input through engine 7 with a workspace "
     "returns success and wrong numbers (measured on cuDNN 9.27.0, H200; channels-last is exact)",
     "plan choice skips engine 7 for such a graph once its plan reports a workspace, outright "
     "with override shapes (detail/plan/plan_choice.cpp asks known_issue_for)",
     engine7_channels_first_conv, nullptr},
    {Defect::PointwiseOnlyRank2Output, "pointwise-only-rank2-output", 0, 0, 91900, 91900,
     "in a graph of pointwise nodes alone, a pointwise output of rank 2 returns success with most "
     "of Y unwritten (measured on cuDNN 9.19.0, H200, tests/gpu/pointwise_test.cpp)",
     "validate() refuses it with ShapeMismatch (detail/graph/fusion_rules.cpp, "
     "check_pointwise_only_graph)",
     nullptr, nullptr},
    {Defect::PointwiseOnlyTwoDimBroadcast, "pointwise-only-two-dim-broadcast", 0, 0, 91900, 91900,
     "in a graph of pointwise nodes alone, a rank-3 operand broadcast along two dims ([1, 1, n] "
     "against [b, m, n]) returns success and wrong values from the second batch on (measured on "
     "cuDNN 9.19.0, H200, tests/gpu/pointwise_test.cpp)",
     "validate() refuses it with ShapeMismatch (detail/graph/fusion_rules.cpp, "
     "check_pointwise_only_graph)",
     nullptr, nullptr},
    {Defect::DynamicGraphConvOverrides, "dynamic-graph-conv-overrides", 0, 0, 91900, 91900,
     "override shapes on a dynamic-shape graph (the path below the operation graph's override "
     "flag, cuDNN 9.21) with a convolution: execute returns success and wrong numbers (measured "
     "on cuDNN 9.19.0, H200, conv_fprop 3x3 + bias + ReLU)",
     "below Feature::OverrideShapeFlag build() takes overrides only on graphs whose nodes are "
     "proven exact there (Node::exact_overrides_on_dynamic_graphs; detail/graph/built_graph.cpp "
     "refuses the "
     "rest with VersionTooOld)",
     nullptr, nullptr},
    {Defect::DynamicGraphMatmulEpilogueOverrides, "dynamic-graph-matmul-epilogue-overrides", 0, 0,
     91900, 91900,
     "override shapes on a dynamic-shape graph of a matmul with any pointwise node after it: "
     "execute fails in the driver (CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER) under heuristics A, "
     "B and Fallback (measured on cuDNN 9.19.0, H200, bench/override_probe; cudnn-frontend 1.32 "
     "the same)",
     "as dynamic-graph-conv-overrides: only matmul nodes alone take overrides below "
     "Feature::OverrideShapeFlag (detail/nodes/matmul.hpp, detail/graph/built_graph.cpp)",
     nullptr, nullptr},
    {Defect::BatchnormInferenceNoEngine, "batchnorm-inference-no-engine", 0, 0, 91900, 91900,
     "a NormForward BATCH_NORM inference operation on its own has no engine (NoEngine for Half, "
     "BFloat16 and Float; measured on cuDNN 9.19.0, H200)",
     "Graph::batchnorm_inference is made of four pointwise nodes, which run standalone (NHWC) and "
     "fuse behind a convolution (api/graph_norms.cpp)",
     nullptr, nullptr},
    {Defect::KernelCacheSerializedOnce, "kernel-cache-serialized-once", 0, 92700, 91900, 92700,
     "a kernel cache's JSON is serialized once: every later read returns the first text, without "
     "the entries inserted since (measured on cuDNN 9.19.0, H200; 9.27.0 re-serializes)",
     "dnngraph never reads the JSON for its own counts, and KernelCache::to_json() refuses with "
     "VersionTooOld once the cache changed since its first serialization (api/kernel_cache.cpp)",
     nullptr, nullptr},
    {Defect::KernelCacheLookupRace, "kernel-cache-lookup-race", 0, 92700, 91900, 92700,
     "a lookup (IS_ENGINECFG_KERNEL_CACHED) on a kernel cache while another thread executes or "
     "finalizes a plan of it corrupts the heap (measured on cuDNN 9.19.0, H200, "
     "bench/kernel_cache_soak with 4 threads; 9.27.0 ran the soak clean)",
     "lookups, plan finalize and cudnnBackendExecute of plans attached to a cache run under the "
     "cache's mutex (api/kernel_cache.cpp, finalize_plan and execute_plan)",
     nullptr, nullptr},
    {Defect::KernelCacheUnfinalizedGraph, "kernel-cache-unfinalized-graph", 0, 0, 91900, 91900,
     "a kernel cache finalizes against an operation graph that was never finalized (an empty "
     "topology), and aborts the process (std::length_error) given a descriptor of another type "
     "(measured on cuDNN 9.19.0, CPU)",
     "KernelCache::build refuses a graph that is not a finalized operation graph (api/"
     "kernel_cache.cpp); the typed backend takes nothing but a backend::OperationGraph",
     nullptr, nullptr},
    {Defect::KernelCacheHostileDocument, "kernel-cache-hostile-document", 0, 0, 91900, 91900,
     "a kernel cache JSON document with some out-of-range or mistyped members crashes the process "
     "at the cache's finalize: SIGSEGV, SIGFPE, or a C++ exception through the C API (measured on "
     "cuDNN 9.19.0, CPU, issue 16)",
     "KernelCache::from_json checks the whole document against the schema cuDNN reads and hands "
     "cuDNN only the document as dnngraph serialized it again "
     "(detail/cache/kernel_cache_schema.cpp)",
     nullptr, nullptr},
    {Defect::SdpaDynamicShape, "sdpa-dynamic-shape", 0, 0, 91900, 92801,
     "a dynamic-shape sdpa graph (the composite attention pattern) built at one sequence length "
     "runs exact there, but the same topology at other lengths, served from the kernel cache, "
     "returns success and NaN rows (measured on cuDNN 9.19.0, H200, tests/gpu/sdpa_test.cpp, and "
     "the same with cudnn-frontend 1.32's own SDPA, bench/sdpa_frontend_probe.cpp; cuDNN 9.27.0 "
     "and 9.28.1 offer no engine for it: their SDPA engines do not support dynamic shape)",
     "plan choice rules out every engine config for an sdpa node in a dynamic-shape graph, so "
     "build() answers NoEngine naming this entry (detail/graph/built_graph.cpp notes the traits); "
     "build "
     "static graphs per sequence length",
     sdpa_dynamic_shape, nullptr},
    {Defect::SdpaOverrideShapes, "sdpa-override-shapes", 0, 0, 92700, 92801,
     "an sdpa graph built with the override-shape flag at one sequence length runs exact there, "
     "but executed at other lengths through override shapes returns success and wrong numbers (O "
     "off by 1.1-1.2, NaN rows, Stats off by 4-5; measured on cuDNN 9.27.0, H200, "
     "tests/gpu/sdpa_test.cpp, and with cudnn-frontend 1.32's own SDPA on 9.27.0 and 9.28.1, "
     "bench/sdpa_frontend_probe.cpp), unless Q and O are ragged (THD), a padding mask gives the "
     "lengths and the graph is inference: that form ran exact (9.27.0, tests/gpu/sdpa_test.cpp "
     "and bench/sdpa_override_route.cpp)",
     "plan choice rules out every engine config for an sdpa node outside that form in a graph "
     "built with set_override_shape_enabled, so build() answers NoEngine naming this entry; use "
     "the ragged form (docs/attention.md), or build one graph at the longest length with a "
     "padding mask and pass each request's lengths, or a static graph per length",
     sdpa_override_shapes, nullptr},
    {Defect::RngOutsideAttention, "rng-outside-attention", 0, 0, 91900, 92801,
     "the RNG operation gets no engine config outside the attention pattern: a Bernoulli mask "
     "alone or as a matmul's dropout (NoEngine, heuristics A and Fallback offer none; measured on "
     "cuDNN 9.19.0, 9.27.0 and 9.28.1, H200, tests/gpu/rng_test.cpp, and the same with "
     "cudnn-frontend 1.32's own rng node on 9.19.0 and 9.27.0, bench/rng_frontend_probe.cpp)",
     "build() answers NoEngine naming this entry when a graph with an rng node outside attention "
     "has no plan (detail/graph/built_graph.cpp asks known_issue_explaining_no_engine); the node "
     "lowers "
     "and validates, for the graphs cuDNN serves",
     nullptr, rng_outside_attention},
    {Defect::ResampleMaxBackwardWithoutIndex, "resample-max-backward-without-index", 0, 0, 91900,
     91900,
     "a max-pooling resample backward given the forward's X and Y but no Index crashes the "
     "process while the plan is built (SIGSEGV in build(); Half and Float NHWC [2, 8, 7, 9], 3x3 "
     "stride 2 padding 1; measured on cuDNN 9.19.0, H200, tests/gpu/resample_test.cpp); from the "
     "Index it runs exact. cudnn-frontend 1.32 has no resample backward node to compare",
     "validate() refuses max-pooling backward without the Index "
     "(detail/nodes/resample_backward.cpp)",
     nullptr, nullptr},
    {Defect::ResampleBfloat16Wrong, "resample-bfloat16-wrong", 0, 92700, 91900, 92700,
     "resample (pooling) in BFloat16 returns success and wrong values: NHWC max pooling 2x2 "
     "stride 2, 586 of 640 outputs wrong; average pooling excluding padding 3x3, 317 of 320 wrong "
     "(values near 1e38); the Half and Float twins exact (measured on cuDNN 9.19.0, H200, "
     "tests/gpu/resample_test.cpp; the same with cudnn-frontend 1.32's own resample node, "
     "bench/resample_frontend_probe.cpp, which in session 28 showed it is the engine without the "
     "TensorCore note, ranked first, and the other engine exact)",
     "below 9.27 validate() refuses BFloat16 pooled tensors (X, Y, dY, dX) of resample and "
     "resample_backward (detail/nodes/resample.cpp) until dnngraph's own run of the engines with "
     "the note is measured there. 9.27 and 9.28.1's runtime-fusion libraries ran both graphs "
     "exact through their first-ranked engine; from 9.27 plan choice skips the engines that pool "
     "BFloat16 wrong (resample-bfloat16-without-tensor-core)",
     nullptr, nullptr},
    {Defect::ResampleAfterPointwiseUnwritten, "resample-after-pointwise-unwritten", 0, 0, 91900,
     92700,
     "a pooling fused behind a pointwise node in one graph (ReLU then max pooling, Half NHWC "
     "[2, 8, 7, 9], 3x3 stride 2 padding 1) builds, executes with success and leaves Y unwritten "
     "(measured on cuDNN 9.19.0 and 9.27.0, H200, tests/gpu/resample_test.cpp; the same with "
     "cudnn-frontend 1.32 on 9.19, bench/resample_frontend_probe.cpp); a pointwise node after the "
     "pooling runs exact",
     "validate() refuses a resample whose X is a virtual tensor another node produces "
     "(detail/nodes/resample.cpp)",
     nullptr, nullptr},
    {Defect::PagedKvTwoBlockSizes, "paged-kv-two-block-sizes", 0, 0, 91900, 92801,
     "attention over a paged K/V cache whose K pages hold 16 positions and V pages 8 (BFloat16 "
     "inference, b 2, max_seq_len_kv 45) builds, executes with success and leaves every value of "
     "O NaN (measured on cuDNN 9.19.0 and 9.27.0, H200, tests/gpu/sdpa_paged_test.cpp); one "
     "block size for both ran exact. cudnn-frontend 1.32's own paged SDPA on cuDNN 9.19.0 and "
     "9.28.1 the same (bench/sdpa_paged_frontend_probe.cpp, Half, K:V blocks 16:8 composite: O "
     "all NaN; unified: off by 0.37; 16:32: off by 0.24 composite, 0.30 unified; 16:16: 9e-5): "
     "cuDNN's behaviour",
     "validate() refuses K and V containers of two block sizes (detail/nodes/sdpa_paged.cpp)",
     nullptr, nullptr},
    {Defect::KernelCacheLoadedNormCrash, "kernel-cache-loaded-norm-crash", 0, 92700, 91900, 92700,
     "the first plan of a layernorm, rmsnorm or adaptive layernorm graph (training, inference or "
     "backward) built in a new process on a kernel cache loaded from a document with entries "
     "calls a null function pointer at the plan's finalize (SIGSEGV in "
     "cudnn::fusion::RuntimeKernel::getNvrtcVersion; measured on cuDNN 9.19.0, H200, "
     "tests/gpu/kernel_cache_persist_test.cpp, 8 of 8 such topologies; 9.27.0 and 9.28.1 ran "
     "the same clean)",
     "KernelCache::from_json loads a document with a norm node without its entries (the "
     "topology only, so builds compile as in a new cache) and logs it (api/kernel_cache.cpp)",
     nullptr, nullptr},
    {Defect::Engine4ChannelsFirstConv, "engine4-channels-first-conv", 92700, 0, 92801, 92801,
     "conv_fprop, conv_dgrad and conv_wgrad with channels-first (NCHW) tensors through engine 4 "
     "with a workspace return success and wrong numbers: x [1, 16, 9, 9] * w [24, 16, 3, 3], "
     "padding 1, every knob setting heuristics offered (measured on cuDNN 9.28.1, H200, "
     "runtime-compiled libraries, python/bench/conv_nchw_probe.py); larger cases ran exact "
     "through it, the channels-last twins through every engine",
     "plan choice skips engine 4 for such a graph once its plan reports a workspace, outright "
     "with override shapes; where no other engine is offered build() answers NoEngine naming "
     "this entry (channels-last tensors run exact)",
     engine4_channels_first_conv, nullptr},
    {Defect::DynamicRowNormBackward, "dynamic-row-norm-backward", 0, 92801, 91900, 92801,
     "a dynamic-shape rmsnorm_backward graph built on a kernel cache at one row count returns "
     "success and a wrong dScale at another (built at 64 rows: exact at 17, off by 25.8 at 333; "
     "BFloat16, 512 features; measured on cuDNN 9.19.0, H200, through dnngraph.torch's norm "
     "graphs, python/tests/test_gpu_torch_ops.py; layernorm_backward, the same operation, was not "
     "reached at 333 rows; cuDNN 9.28.1 ran both exact at 64, 17, 333 and 1 rows; not yet "
     "compared with cudnn-frontend)",
     "below 9.28.1 plan choice rules out every engine config for a layernorm_backward or "
     "rmsnorm_backward node in a dynamic-shape graph, so build() answers NoEngine naming this "
     "entry; build the backward static per row count (dnngraph.torch does)",
     dynamic_row_norm_backward, nullptr},
    {Defect::ResampleBfloat16WithoutTensorCore, "resample-bfloat16-without-tensor-core", 92700, 0,
     92801, 92801,
     "resample (pooling) in BFloat16 through an engine without the TensorCore numerical note "
     "returns success and wrong values: NHWC max pooling 2x2 stride 2 of [2, 16, 9, 11], 586 of "
     "640 outputs wrong; average pooling excluding padding 3x3 stride 2 padding 1 of [2, 8, 7, "
     "9], 317 of 320 wrong (values near 1e38) (measured on cuDNN 9.28.1, H200, "
     "tests/gpu/resample_test.cpp: engine 3, ranked first, with every library of the pip wheel; "
     "engine 2, ranked fifth, with the runtime-fusion libraries alone; every engine with the note "
     "exact, the Half twins exact through every engine; cudnn-frontend 1.32's own resample node "
     "the same on 9.28.1 and on 9.19.0, bench/resample_frontend_probe.cpp --every)",
     "plan choice skips engines without the TensorCore note for a graph with a resample or "
     "resample_backward node on BFloat16 tensors; where no other engine is offered build() "
     "answers NoEngine naming this entry. Below 9.27 BFloat16 pooling is refused outright "
     "(resample-bfloat16-wrong)",
     bfloat16_resample_without_tensor_core, nullptr},
}};

constexpr bool table_in_defect_order() {
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (static_cast<std::size_t>(table[i].defect) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_in_defect_order(),
              "detail/cudnn/known_issues.cpp: the table is out of Defect order");

std::string range_text(const KnownIssue& issue) {
  std::string text = "measured on cuDNN " + backend::version_string(issue.first_measured);
  if (issue.last_measured != issue.first_measured) {
    text += " to " + backend::version_string(issue.last_measured);
  }
  text += issue.first_affected == 0
              ? "; applies to every cuDNN"
              : "; applies from cuDNN " + backend::version_string(issue.first_affected);
  text += issue.first_fixed == 0
              ? ", no fixed version measured yet"
              : " below " + backend::version_string(issue.first_fixed) + " (measured fixed there)";
  return text;
}

}  // namespace

std::span<const KnownIssue> known_issues() noexcept { return table; }

const KnownIssue& known_issue(Defect defect) noexcept {
  return table[static_cast<std::size_t>(defect)];
}

bool in_range(const KnownIssue& issue, std::int64_t version) noexcept {
  return version >= issue.first_affected && (issue.first_fixed == 0 || version < issue.first_fixed);
}

bool workaround_needed(Defect defect) noexcept {
  return in_range(known_issue(defect), backend::loaded_version());
}

const KnownIssue* known_issue_for(const GraphTraits& graph, const Candidate& candidate,
                                  std::int64_t version) noexcept {
  for (const KnownIssue& issue : table) {
    if (issue.applies != nullptr && in_range(issue, version) && issue.applies(graph, candidate)) {
      return &issue;
    }
  }
  return nullptr;
}

const KnownIssue* known_issue_explaining_no_engine(const GraphTraits& graph,
                                                   std::int64_t version) noexcept {
  for (const KnownIssue& issue : table) {
    if (issue.explains_no_engine != nullptr && in_range(issue, version) &&
        issue.explains_no_engine(graph)) {
      return &issue;
    }
  }
  return nullptr;
}

std::string describe(const KnownIssue& issue) {
  return "known cuDNN defect " + std::string(issue.id) + " (" + range_text(issue) +
         "): " + std::string(issue.what);
}

}  // namespace dnngraph::detail
