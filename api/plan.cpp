// PlanInfo's text, EngineChoice's text both ways, and the names of cuDNN's engine notes.
#include "api/plan.hpp"

#include <cudnn.h>
#include <gsl/util>

#include <array>
#include <cctype>
#include <charconv>

namespace dnngraph {

namespace {

// The knob names PlanInfo prints, by cudnnBackendKnobType_t value.
struct KnobName {
  cudnnBackendKnobType_t type;
  std::string_view name;
};
constexpr std::array<KnobName, 13> knob_names{{
    {CUDNN_KNOB_TYPE_SPLIT_K, "SPLIT_K"},
    {CUDNN_KNOB_TYPE_SWIZZLE, "SWIZZLE"},
    {CUDNN_KNOB_TYPE_TILE_SIZE, "TILE_SIZE"},
    {CUDNN_KNOB_TYPE_EDGE, "EDGE"},
    {CUDNN_KNOB_TYPE_KBLOCK, "KBLOCK"},
    {CUDNN_KNOB_TYPE_LDGA, "LDGA"},
    {CUDNN_KNOB_TYPE_LDGB, "LDGB"},
    {CUDNN_KNOB_TYPE_STAGES, "STAGES"},
    {CUDNN_KNOB_TYPE_KERNEL_CFG, "KERNEL_CFG"},
    {CUDNN_KNOB_TYPE_SPLIT_COLS, "SPLIT_COLS"},
    {CUDNN_KNOB_TYPE_TILE_ROWS, "TILE_ROWS"},
    {CUDNN_KNOB_TYPE_TILE_COLS, "TILE_COLS"},
    {CUDNN_KNOB_TYPE_WARP_SPEC_CFG, "WARP_SPEC_CFG"},
}};

std::string knob_name(std::int64_t type) {
  for (const KnobName& k : knob_names) {
    if (static_cast<std::int64_t>(k.type) == type) {
      return std::string(k.name);
    }
  }
  return "knob" + std::to_string(type);
}

std::string knob_list(const KnobChoices& knobs) {
  std::string out = "{";
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    out += (i == 0 ? "" : ", ") + knob_name(knobs[i].first) + "=" + std::to_string(knobs[i].second);
  }
  return out + "}";
}

constexpr std::array<std::string_view, 10> numerical_names{"TensorCore",
                                                           "DownConvertInputs",
                                                           "ReducedPrecisionReduction",
                                                           "Fft",
                                                           "Nondeterministic",
                                                           "Winograd",
                                                           "WinogradTile4x4",
                                                           "WinogradTile6x6",
                                                           "WinogradTile13x13",
                                                           "StrictNanPropagation"};
constexpr std::array<std::string_view, 5> behavior_names{
    "RuntimeCompilation", "RequiresFilterInt8x32Reorder", "RequiresBiasInt8x32Reorder",
    "SupportsCudaGraphNativeApi", "CublasLtDependency"};

// A reader of parse_engine_choice's text: skips spaces, takes words, integers and punctuation.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') {
      ++pos_;
    }
  }
  bool take(std::string_view word) {
    skip_spaces();
    if (text_.substr(pos_).starts_with(word)) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  std::optional<std::int64_t> integer() {
    skip_spaces();
    std::int64_t value = 0;
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc{} || ptr == begin) {
      return std::nullopt;
    }
    pos_ += gsl::narrow_cast<std::size_t>(ptr - begin);  // ptr > begin: checked above
    return value;
  }
  // Letters, digits and '_' from here.
  std::string_view word() {
    skip_spaces();
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  // Moves to just after the next `c`; false when there is none.
  bool skip_past(char c) {
    const std::size_t at = text_.find(c, pos_);
    if (at == std::string_view::npos) {
      return false;
    }
    pos_ = at + 1;
    return true;
  }
  [[nodiscard]] std::size_t position() const noexcept { return pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::optional<std::int64_t> knob_type(std::string_view name) {
  for (const KnobName& k : knob_names) {
    if (k.name == name) {
      return static_cast<std::int64_t>(k.type);
    }
  }
  if (name.starts_with("knob")) {
    std::int64_t value = 0;
    const auto digits = name.substr(4);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc{} && ptr == digits.data() + digits.size() && !digits.empty()) {
      return value;
    }
  }
  return std::nullopt;
}

Error parse_error(std::string_view text, std::size_t at, std::string_view expected) {
  return Error{ErrorCode::InvalidAttribute,
               "parse_engine_choice: expected " + std::string(expected) + " at character " +
                   std::to_string(at) + " of \"" + std::string(text) +
                   "\" (the form is \"engine 7, knobs {KERNEL_CFG=22, SPLIT_K=1}\")"};
}

}  // namespace

std::string_view to_string(NumericalNote note) noexcept {
  const auto i = static_cast<std::size_t>(note);
  return i < numerical_names.size() ? numerical_names.at(i) : unknown_enumerator;
}
std::string_view to_string(BehaviorNote note) noexcept {
  const auto i = static_cast<std::size_t>(note);
  return i < behavior_names.size() ? behavior_names.at(i) : unknown_enumerator;
}
bool is_known(NumericalNote note) noexcept {
  return static_cast<std::size_t>(note) < numerical_names.size();
}
bool is_known(BehaviorNote note) noexcept {
  return static_cast<std::size_t>(note) < behavior_names.size();
}

std::string to_string(const EngineChoice& choice) {
  return "engine " + std::to_string(choice.engine_id) + ", knobs " + knob_list(choice.knobs);
}

Result<EngineChoice> parse_engine_choice(std::string_view text) {
  Reader in(text);
  EngineChoice choice;
  if (!in.take("engine")) {
    return std::unexpected(parse_error(text, in.position(), "\"engine\""));
  }
  auto id = in.integer();
  if (!id || *id < 0) {
    return std::unexpected(parse_error(text, in.position(), "an engine id (an integer >= 0)"));
  }
  choice.engine_id = *id;
  // "engine 7, knobs {...}" or "engine 7 (heuristics A, knobs {...}), ...": the knobs follow.
  if (!in.skip_past('{')) {
    return std::unexpected(parse_error(text, in.position(), "the knob list \"knobs {...}\""));
  }
  if (in.take("}")) {
    return choice;
  }
  while (true) {
    const std::size_t at = in.position();
    const std::string_view name = in.word();
    auto type = knob_type(name);
    if (!type) {
      return std::unexpected(
          parse_error(text, at, "a knob name (SPLIT_K, KERNEL_CFG, ... or knob<N>)"));
    }
    if (!in.take("=")) {
      return std::unexpected(parse_error(text, in.position(), "'='"));
    }
    auto value = in.integer();
    if (!value) {
      return std::unexpected(parse_error(text, in.position(), "a knob value (an integer)"));
    }
    choice.knobs.emplace_back(*type, *value);
    if (in.take("}")) {
      return choice;
    }
    if (!in.take(",")) {
      return std::unexpected(parse_error(text, in.position(), "',' or '}'"));
    }
  }
}

std::string PlanInfo::describe() const {
  std::string out = "engine " + std::to_string(engine_id) + " (heuristics " +
                    std::string(to_string(mode)) + ", knobs " + knob_list(knobs) + ")";
  if (!numerical_notes.empty() || !behavior_notes.empty()) {
    out += ", notes {";
    bool first = true;
    for (NumericalNote note : numerical_notes) {
      out += (first ? "" : ", ") + std::string(to_string(note));
      first = false;
    }
    for (BehaviorNote note : behavior_notes) {
      out += (first ? "" : ", ") + std::string(to_string(note));
      first = false;
    }
    out += "}";
  }
  if (from_cached_config) {
    out += ", from the kernel cache's known configs";
  }
  if (kernel_cache_hit) {
    out += ", kernel cache hit";
  }
  if (deserialized) {
    out += plan_from_document ? ", deserialized (cuDNN's plan document)"
                              : ", deserialized (engine config finalized again)";
  }
  if (plan_index >= 0) {
    out += ", candidate " + std::to_string(plan_index) + " of " + std::to_string(plan_count);
  }
  out += ", workspace " + std::to_string(workspace_size) + " B, " +
         std::to_string(candidates_tried) + " candidate(s) tried";
  return out;
}

}  // namespace dnngraph
