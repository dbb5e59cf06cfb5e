// dnngraph::Graph::autotune: every ranked candidate (up to a bound) built, timed on the caller's
// buffers with CUDA events, the fastest kept; and the report's text.
#include "api/graph.hpp"

#include "backend/handle.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/graph/built_graph.hpp"
#include "detail/plan/gpu_timer.hpp"

#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace dnngraph {

namespace {

std::string text_of(const Error& e) { return std::string(to_string(e.code)) + ": " + e.message; }

double median_of(std::vector<double> values) {
  std::ranges::sort(values);
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Result<void> check_options(const AutotuneOptions& o) {
  if (o.warmup < 0 || o.iterations < 1 || o.max_candidates < 1 || o.iterations > 100000 ||
      o.warmup > 100000) {
    return make_error(ErrorCode::InvalidAttribute,
                      "autotune: options warmup " + std::to_string(o.warmup) + ", iterations " +
                          std::to_string(o.iterations) + ", max_candidates " +
                          std::to_string(o.max_candidates) +
                          ": expected warmup in 0..100000, iterations in 1..100000 and "
                          "max_candidates >= 1");
  }
  return {};
}

}  // namespace

std::optional<double> AutotuneReport::speedup_over_first() const {
  const std::optional<double> first_ms = rows.empty() ? std::nullopt : rows.front().median_ms;
  if (!first_ms || chosen_index < 0) {
    return std::nullopt;
  }
  const double first = *first_ms;
  for (const AutotuneRow& row : rows) {
    const std::optional<double> ms = row.median_ms;
    if (row.plan_index == chosen_index && ms && *ms > 0) {
      return first / *ms;
    }
  }
  return std::nullopt;
}

std::string AutotuneReport::describe() const {
  std::string text;
  for (const AutotuneRow& row : rows) {
    text += "  #" + std::to_string(row.plan_index) + " " + to_string(row.choice) + ": ";
    if (row.median_ms) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.4f ms", *row.median_ms);
      text += ms;
      text += " (workspace " + std::to_string(row.workspace_size) + " B)";
    } else {
      text += "not timed, " + row.skipped;
    }
    if (row.plan_index == chosen_index) {
      text += " <- chosen";
    }
    text += '\n';
  }
  return text;
}

Result<AutotuneReport> Graph::autotune(const Handle& handle,
                                       const std::unordered_map<std::int64_t, void*>& variant_pack,
                                       void* workspace, std::int64_t workspace_bytes,
                                       const AutotuneOptions& options) {
  if (auto ok = check_options(options); !ok) {
    return std::unexpected(ok.error());
  }
  if (workspace_bytes < 0 || (workspace == nullptr && workspace_bytes > 0)) {
    return make_error(ErrorCode::InvalidAttribute,
                      "autotune: workspace_bytes " + std::to_string(workspace_bytes) + " with a " +
                          (workspace == nullptr ? "null" : "non-null") +
                          " workspace; give the workspace's size in bytes (0 with none)");
  }
  auto count = plan_count();
  if (!count) {
    return std::unexpected(Error{count.error().code, "autotune: " + count.error().message});
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "autotune: the Handle is empty");
  }
  auto stream_of_handle = backend::get_stream(handle.native());
  if (!stream_of_handle) {
    return std::unexpected(detail::cudnn_error(stream_of_handle.error(), "autotune"));
  }
  cudaStream_t stream = *stream_of_handle;
  // What build() left, restored when no candidate can be timed or timing itself fails.
  std::unique_ptr<const detail::BuiltGraph> original = std::move(built_);
  const PlanPolicy policy = built_policy_;
  const std::vector<HeuristicMode> modes = built_modes_;
  const auto restore = [&] {
    built_ = std::move(original);
    built_policy_ = policy;
    built_modes_ = modes;
  };
  std::unique_ptr<const detail::BuiltGraph> fastest;
  AutotuneReport report;
  double best_ms = 0;
  const std::int64_t n = std::min(*count, options.max_candidates);
  for (std::int64_t i = 0; i < n; ++i) {
    AutotuneRow row;
    row.plan_index = i;
    PlanPolicy at = policy;
    at.engine.reset();
    at.plan_index = i;
    if (auto built = build_checked(handle, modes, at); !built) {
      row.skipped = "build failed: " + text_of(built.error());
      report.rows.push_back(std::move(row));
      continue;
    }
    const PlanInfo& info = built_->info();
    row.choice = info.choice();
    row.workspace_size = info.workspace_size;
    if (info.workspace_size > workspace_bytes) {
      row.skipped = "needs " + std::to_string(info.workspace_size) + " B of workspace, " +
                    std::to_string(workspace_bytes) + " B given";
      built_.reset();
      report.rows.push_back(std::move(row));
      continue;
    }
    auto times = detail::gpu_times_ms(stream, options.warmup, options.iterations,
                                      [&] { return execute(handle, variant_pack, workspace); });
    if (!times) {
      if (times.error().code == ErrorCode::CudaFailure) {  // timing itself is broken
        restore();
        return std::unexpected(times.error());
      }
      if (times.error().code != ErrorCode::CudnnFailure) {
        // The caller's pack or workspace (a missing uid, a null pointer, a graph edited since
        // build), not this candidate: every other would fail the same way, after its build.
        restore();
        return make_error(times.error().code, "autotune: " + times.error().message);
      }
      row.skipped = "execute failed: " + text_of(times.error());
      built_.reset();
      report.rows.push_back(std::move(row));
      continue;
    }
    row.median_ms = median_of(std::move(*times));
    if (!fastest || *row.median_ms < best_ms) {
      best_ms = *row.median_ms;
      report.chosen_index = i;
      fastest = std::move(built_);
    } else {
      built_.reset();
    }
    report.rows.push_back(std::move(row));
  }
  if (!fastest) {
    restore();
    return make_error(
        ErrorCode::NoEngine,
        "autotune: no candidate could be timed; the graph keeps its plan:\n" + report.describe());
  }
  built_ = std::move(fastest);
  built_policy_ = policy;
  built_modes_ = modes;
  detail::log_info([&] {
    return "autotune: " + std::to_string(report.rows.size()) + " candidate(s), kept #" +
           std::to_string(report.chosen_index) + ":\n" + report.describe();
  });
  return report;
}

}  // namespace dnngraph
