// The known-issues table: which candidates each measured cuDNN defect rules out, on which
// versions, and how the refusal reads. Plan choice consults it for every candidate.
#define BOOST_TEST_MODULE known_issues
#include <boost/test/unit_test.hpp>

#include "backend/features.hpp"
#include "detail/cudnn/known_issues.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <string>

using dnngraph::EngineChoice;
using dnngraph::NumericalNote;
using dnngraph::detail::Candidate;
using dnngraph::detail::Defect;
using dnngraph::detail::GraphTraits;
using dnngraph::detail::in_range;
using dnngraph::detail::known_issue_for;

namespace {

GraphTraits channels_first_conv() {
  GraphTraits traits;
  traits.channels_first_conv_fprop = true;
  return traits;
}

const EngineChoice engine7{7, {}};
const EngineChoice engine28{28, {}};

}  // namespace

BOOST_AUTO_TEST_CASE(every_entry_has_an_id_a_text_a_workaround_and_a_measured_version_range) {
  for (const auto& issue : dnngraph::detail::known_issues()) {
    BOOST_TEST_CONTEXT(issue.id) {
      BOOST_TEST(!issue.id.empty());
      BOOST_TEST(&dnngraph::detail::known_issue(issue.defect) == &issue);
      BOOST_TEST(issue.what.find("measured") != std::string::npos);
      BOOST_TEST(!issue.workaround.empty());
      BOOST_TEST((issue.first_fixed == 0 || issue.first_fixed > issue.first_affected));
      BOOST_TEST(issue.first_measured >= 90000);
      BOOST_TEST(issue.last_measured >= issue.first_measured);
      // A fixed version is one that was measured: the newest measurement, past the defect's.
      BOOST_TEST((issue.first_fixed == 0 || (issue.first_fixed == issue.last_measured &&
                                             issue.first_fixed > issue.first_measured)));
      // The defect holds where it was first measured.
      BOOST_TEST(in_range(issue, issue.first_measured));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_range_ends_where_the_defect_was_measured_fixed) {
  const auto& once = dnngraph::detail::known_issue(Defect::KernelCacheSerializedOnce);
  BOOST_TEST(in_range(once, 91900));
  BOOST_TEST(in_range(once, 92600));  // unmeasured between: the workaround stays
  BOOST_TEST(!in_range(once, 92700));
  BOOST_TEST(!in_range(once, 93000));
  const auto& engine7 = dnngraph::detail::known_issue(Defect::Engine7ChannelsFirstConvFprop);
  BOOST_TEST(in_range(engine7, 91900));  // held for every version: none measured fixed
  BOOST_TEST(in_range(engine7, 100000));
}

BOOST_AUTO_TEST_CASE(the_kernel_cache_workarounds_apply_below_9_27) {
  const std::int64_t loaded = dnngraph::backend::loaded_version();
  BOOST_TEST(dnngraph::detail::workaround_needed(Defect::KernelCacheLookupRace) ==
             (loaded < 92700));
  BOOST_TEST(dnngraph::detail::workaround_needed(Defect::KernelCacheSerializedOnce) ==
             (loaded < 92700));
}

BOOST_AUTO_TEST_CASE(describe_says_where_it_was_measured_and_where_it_applies) {
  const std::string text =
      dnngraph::detail::describe(dnngraph::detail::known_issue(Defect::KernelCacheLookupRace));
  BOOST_TEST(text.find("kernel-cache-lookup-race") != std::string::npos, text);
  BOOST_TEST(text.find("measured on cuDNN 9.19.0 to 9.27.0") != std::string::npos, text);
  BOOST_TEST(text.find("below 9.27.0") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(only_entries_with_a_candidate_rule_take_part_in_plan_choice) {
  GraphTraits everything = channels_first_conv();
  everything.override_shapes = true;
  for (std::int64_t version : {91900, 92700}) {
    const auto* issue = known_issue_for(everything, Candidate{engine7, 6134}, version);
    BOOST_TEST_REQUIRE(issue != nullptr);
    BOOST_TEST((issue->defect == Defect::Engine7ChannelsFirstConvFprop));
  }
}

BOOST_AUTO_TEST_CASE(engine7_with_a_workspace_on_a_channels_first_conv_is_refused_on_9_27) {
  const auto* issue = known_issue_for(channels_first_conv(), Candidate{engine7, 6134}, 92700);
  BOOST_TEST_REQUIRE(issue != nullptr);
  const std::string text = dnngraph::detail::describe(*issue);
  BOOST_TEST(text.find("engine 7") != std::string::npos);
  BOOST_TEST(text.find("NCHW") != std::string::npos);
  BOOST_TEST(text.find("9.27") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(engine7_is_kept_where_the_measurements_were_exact) {
  // The channels-last twins ran exact through engine 7 without a workspace.
  BOOST_TEST(known_issue_for(GraphTraits{}, Candidate{engine7, 6134}, 92700) == nullptr);
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine7, 0}, 92700) == nullptr);
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine28, 6134}, 92700) == nullptr);
}

BOOST_AUTO_TEST_CASE(before_the_plan_exists_only_an_override_graph_rules_engine7_out) {
  // Workspace -1: not known yet (checked again once the plan is finalized).
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine7}, 92700) == nullptr);
  GraphTraits overrides = channels_first_conv();
  overrides.override_shapes = true;  // a later shape's workspace is unknown at build
  BOOST_TEST(known_issue_for(overrides, Candidate{engine7}, 92700) != nullptr);
  BOOST_TEST(known_issue_for(overrides, Candidate{engine7, 0}, 92700) != nullptr);
}

BOOST_AUTO_TEST_CASE(an_sdpa_node_in_a_dynamic_shape_graph_rules_every_candidate_out) {
  GraphTraits sdpa;
  sdpa.sdpa = true;
  BOOST_TEST(known_issue_for(sdpa, Candidate{engine7}, 91900) == nullptr);  // static: served
  sdpa.dynamic_shape = true;
  for (std::int64_t version : {91900, 92700}) {
    for (const auto& engine : {engine7, engine28}) {
      const auto* issue = known_issue_for(sdpa, Candidate{engine}, version);
      BOOST_TEST_REQUIRE(issue != nullptr);
      BOOST_TEST((issue->defect == Defect::SdpaDynamicShape));
      BOOST_TEST(dnngraph::detail::describe(*issue).find("NaN rows") != std::string::npos);
    }
  }
  GraphTraits dynamic_matmul;
  dynamic_matmul.dynamic_shape = true;
  BOOST_TEST(known_issue_for(dynamic_matmul, Candidate{engine7}, 91900) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_row_norm_backward_in_a_dynamic_shape_graph_rules_every_candidate_out) {
  GraphTraits norm;
  norm.row_norm_backward = true;
  BOOST_TEST(known_issue_for(norm, Candidate{engine7}, 91900) == nullptr);  // static: served
  norm.dynamic_shape = true;
  for (const auto& engine : {engine7, engine28}) {
    const auto* issue = known_issue_for(norm, Candidate{engine}, 91900);
    BOOST_TEST_REQUIRE(issue != nullptr);
    BOOST_TEST((issue->defect == Defect::DynamicRowNormBackward));
    BOOST_TEST(dnngraph::detail::describe(*issue).find("wrong dScale") != std::string::npos);
  }
  BOOST_TEST(known_issue_for(norm, Candidate{engine7}, 92801) == nullptr);  // measured exact
}

BOOST_AUTO_TEST_CASE(an_sdpa_node_in_an_override_shape_graph_rules_every_candidate_out) {
  GraphTraits sdpa;
  sdpa.sdpa = true;
  sdpa.override_shapes = true;
  // The ragged inference form ran exact (cuDNN 9.28.1): served.
  BOOST_TEST(known_issue_for(sdpa, Candidate{engine7}, 92801) == nullptr);
  sdpa.sdpa_outside_override_form = true;
  for (std::int64_t version : {92100, 92700, 92801}) {
    const auto* issue = known_issue_for(sdpa, Candidate{engine7}, version);
    BOOST_TEST_REQUIRE(issue != nullptr);
    BOOST_TEST((issue->defect == Defect::SdpaOverrideShapes));
    BOOST_TEST(dnngraph::detail::describe(*issue).find("wrong numbers") != std::string::npos);
  }
  GraphTraits override_matmul;
  override_matmul.override_shapes = true;
  BOOST_TEST(known_issue_for(override_matmul, Candidate{engine7}, 92700) == nullptr);
}

BOOST_AUTO_TEST_CASE(an_rng_node_outside_attention_explains_a_no_engine_build) {
  using dnngraph::detail::known_issue_explaining_no_engine;
  GraphTraits rng;
  rng.rng = true;
  for (std::int64_t version : {91900, 92700}) {
    const auto* issue = known_issue_explaining_no_engine(rng, version);
    BOOST_TEST_REQUIRE(issue != nullptr);
    BOOST_TEST((issue->defect == Defect::RngOutsideAttention));
    BOOST_TEST(dnngraph::detail::describe(*issue).find("rng-outside-attention") !=
               std::string::npos);
  }
  // Inside attention cuDNN serves the RNG (sdpa dropout); a graph without rng is not explained.
  GraphTraits dropout_attention = rng;
  dropout_attention.sdpa = true;
  BOOST_TEST(known_issue_explaining_no_engine(dropout_attention, 92700) == nullptr);
  BOOST_TEST(known_issue_explaining_no_engine(GraphTraits{}, 92700) == nullptr);
  // Candidate rules are not NoEngine explanations, and the other way round.
  BOOST_TEST(known_issue_for(rng, Candidate{engine7}, 92700) == nullptr);
}

BOOST_AUTO_TEST_CASE(engine4_with_a_workspace_on_any_channels_first_conv_is_refused_from_9_27) {
  const EngineChoice engine4{4, {}};
  GraphTraits dgrad;  // conv_dgrad and conv_wgrad note channels_first_conv alone
  dgrad.channels_first_conv = true;
  for (std::int64_t version : {92700, 92801, 100000}) {
    const auto* issue = known_issue_for(dgrad, Candidate{engine4, 13776}, version);
    BOOST_TEST_REQUIRE(issue != nullptr);
    BOOST_TEST((issue->defect == Defect::Engine4ChannelsFirstConv));
    const std::string text = dnngraph::detail::describe(*issue);
    BOOST_TEST(text.find("engine4-channels-first-conv") != std::string::npos, text);
    BOOST_TEST(
        text.find("measured on cuDNN 9.28.1; applies from cuDNN 9.27.0") != std::string::npos,
        text);
  }
  // 9.19 ran the same case exact; no workspace, another engine or channels-last tensors: kept.
  BOOST_TEST(known_issue_for(dgrad, Candidate{engine4, 13776}, 91900) == nullptr);
  BOOST_TEST(known_issue_for(dgrad, Candidate{engine4, 0}, 92801) == nullptr);
  BOOST_TEST(known_issue_for(dgrad, Candidate{engine28, 13776}, 92801) == nullptr);
  BOOST_TEST(known_issue_for(GraphTraits{}, Candidate{engine4, 13776}, 92801) == nullptr);
  GraphTraits overrides = dgrad;  // a later shape's workspace is unknown at build
  overrides.override_shapes = true;
  BOOST_TEST(known_issue_for(overrides, Candidate{engine4}, 92801) != nullptr);
}

BOOST_AUTO_TEST_CASE(a_bfloat16_pooling_engine_without_the_tensor_core_note_is_refused_from_9_27) {
  const EngineChoice engine2{2, {}};
  const EngineChoice engine3{3, {}};
  const std::array<NumericalNote, 1> tensor_core{NumericalNote::TensorCore};
  const std::array<NumericalNote, 1> other{NumericalNote::ReducedPrecisionReduction};
  GraphTraits pooling;
  pooling.bfloat16_resample = true;
  for (std::int64_t version : {92700, 92801, 100000}) {
    // Before the plan exists (no workspace known) and after; no notes, or others.
    for (std::int64_t workspace : {-1, 0}) {
      for (std::span<const NumericalNote> notes :
           {std::span<const NumericalNote>{}, std::span<const NumericalNote>{other}}) {
        const auto* issue = known_issue_for(pooling, Candidate{engine3, workspace, notes}, version);
        BOOST_TEST_REQUIRE(issue != nullptr);
        BOOST_TEST((issue->defect == Defect::ResampleBfloat16WithoutTensorCore));
        const std::string text = dnngraph::detail::describe(*issue);
        BOOST_TEST(text.find("resample-bfloat16-without-tensor-core") != std::string::npos, text);
        BOOST_TEST(
            text.find("measured on cuDNN 9.28.1; applies from cuDNN 9.27.0") != std::string::npos,
            text);
      }
    }
  }
  // An engine with the note (whatever its id: the ids move with the libraries loaded) is kept;
  // so is every engine of a graph without BFloat16 pooling; below 9.27 validate() refuses
  // BFloat16 pooling before plan choice (resample-bfloat16-wrong).
  BOOST_TEST(known_issue_for(pooling, Candidate{engine2, 0, tensor_core}, 92801) == nullptr);
  BOOST_TEST(known_issue_for(pooling, Candidate{engine3, 0, tensor_core}, 92801) == nullptr);
  BOOST_TEST(known_issue_for(GraphTraits{}, Candidate{engine3, 0}, 92801) == nullptr);
  BOOST_TEST(known_issue_for(pooling, Candidate{engine3, 0}, 91900) == nullptr);
  BOOST_TEST(dnngraph::detail::workaround_needed(Defect::ResampleBfloat16Wrong) ==
             (dnngraph::backend::loaded_version() < 92700));
}
