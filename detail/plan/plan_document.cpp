// The plan document of Graph::serialize(): written and read with Boost.JSON.
#include "detail/plan/plan_document.hpp"

#include <boost/json.hpp>

#include <array>
#include <cstdio>
#include <limits>
#include <utility>

namespace dnngraph::detail {

namespace json = boost::json;

namespace {

// 64-bit FNV-1a of the text, as 16 hex digits: catches a truncated or changed cuDNN part.
std::string digest(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  std::array<char, 17> hex{};
  std::snprintf(hex.data(), hex.size(), "%016llx", static_cast<unsigned long long>(hash));
  return hex.data();
}

std::unexpected<Error> refuse(std::string_view path, std::string_view expected,
                              std::string_view given) {
  return make_error(ErrorCode::InvalidJson, "plan document: " + std::string(path) + ": expected " +
                                                std::string(expected) + ", given " +
                                                std::string(given));
}

std::string shown(const json::value& value) {
  std::string text = json::serialize(value);
  constexpr std::size_t longest = 80;
  return text.size() > longest ? text.substr(0, longest) + "..." : text;
}

// Reads one object's members, each once, refusing a member it does not know.
class Reader {
 public:
  Reader(const json::object& object, std::string path) : object_(object), path_(std::move(path)) {}

  [[nodiscard]] Result<void> only(std::initializer_list<std::string_view> known) const {
    for (const auto& member : object_) {
      if (std::ranges::find(known, std::string_view(member.key())) == known.end()) {
        return refuse(path_ + "." + std::string(member.key()), "no such member",
                      "one (this format has no such member)");
      }
    }
    return {};
  }
  [[nodiscard]] Result<const json::value*> member(std::string_view name) const {
    const json::value* value = object_.if_contains(name);
    if (value == nullptr) {
      return refuse(at(name), "a member", "none (it is missing)");
    }
    return value;
  }
  [[nodiscard]] Result<std::string> string(std::string_view name) const {
    auto value = member(name);
    if (!value) {
      return std::unexpected(value.error());
    }
    if (!(*value)->is_string()) {
      return refuse(at(name), "a string", shown(**value));
    }
    return std::string((*value)->get_string());
  }
  [[nodiscard]] Result<std::int64_t> integer(std::string_view name, std::int64_t lowest,
                                             std::int64_t highest) const {
    auto value = member(name);
    if (!value) {
      return std::unexpected(value.error());
    }
    return integer_of(**value, at(name), lowest, highest);
  }
  [[nodiscard]] Result<bool> boolean(std::string_view name) const {
    auto value = member(name);
    if (!value) {
      return std::unexpected(value.error());
    }
    if (!(*value)->is_bool()) {
      return refuse(at(name), "true or false", shown(**value));
    }
    return (*value)->get_bool();
  }
  [[nodiscard]] std::string at(std::string_view name) const {
    return path_ + "." + std::string(name);
  }

  static Result<std::int64_t> integer_of(const json::value& value, const std::string& path,
                                         std::int64_t lowest, std::int64_t highest) {
    const std::string expected =
        "an integer in " + std::to_string(lowest) + ".." + std::to_string(highest);
    if (!value.is_int64() && !value.is_uint64()) {
      return refuse(path, expected, shown(value));
    }
    if (value.is_uint64() && value.get_uint64() > static_cast<std::uint64_t>(highest)) {
      return refuse(path, expected, shown(value));
    }
    const std::int64_t v =
        value.is_int64() ? value.get_int64() : static_cast<std::int64_t>(value.get_uint64());
    if (v < lowest || v > highest) {
      return refuse(path, expected, shown(value));
    }
    return v;
  }

 private:
  const json::object& object_;
  std::string path_;
};

Result<const json::object*> object_of(const json::value& value, const std::string& path) {
  if (!value.is_object()) {
    return refuse(path, "an object", shown(value));
  }
  return &value.get_object();
}

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();

// The member `name` of `document`: an object of the `known` members only.
Result<Reader> object_member(const Reader& document, std::string_view name,
                             std::initializer_list<std::string_view> known) {
  auto value = document.member(name);
  if (!value) {
    return std::unexpected(value.error());
  }
  auto object = object_of(**value, document.at(name));
  if (!object) {
    return std::unexpected(object.error());
  }
  Reader reader(**object, document.at(name));
  if (auto ok = reader.only(known); !ok) {
    return std::unexpected(ok.error());
  }
  return reader;
}

Result<GpuIdentity> read_gpu(const Reader& document) {
  auto read = object_member(document, "gpu", {"name", "major", "minor"});
  if (!read) {
    return std::unexpected(read.error());
  }
  const Reader& gpu = *read;
  auto name = gpu.string("name");
  if (!name) {
    return std::unexpected(name.error());
  }
  auto major = gpu.integer("major", 0, int32_max);
  if (!major) {
    return std::unexpected(major.error());
  }
  auto minor = gpu.integer("minor", 0, int32_max);
  if (!minor) {
    return std::unexpected(minor.error());
  }
  return GpuIdentity{std::move(*name), static_cast<int>(*major), static_cast<int>(*minor)};
}

Result<EngineChoice> read_engine(const Reader& document) {
  auto read = object_member(document, "engine", {"id", "knobs"});
  if (!read) {
    return std::unexpected(read.error());
  }
  const Reader& engine = *read;
  EngineChoice choice;
  auto id = engine.integer("id", 0, int64_max);
  if (!id) {
    return std::unexpected(id.error());
  }
  choice.engine_id = *id;
  auto knobs = engine.member("knobs");
  if (!knobs) {
    return std::unexpected(knobs.error());
  }
  const std::string knobs_path = engine.at("knobs");
  if (!(*knobs)->is_array()) {
    return refuse(knobs_path, "an array of [type, value] pairs", shown(**knobs));
  }
  const json::array& pairs = (*knobs)->get_array();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::string path = knobs_path + "[" + std::to_string(i) + "]";
    if (!pairs[i].is_array() || pairs[i].get_array().size() != 2) {
      return refuse(path, "a [type, value] pair", shown(pairs[i]));
    }
    const json::array& pair = pairs[i].get_array();
    auto type = Reader::integer_of(pair[0], path + "[0]", 0, int32_max);
    if (!type) {
      return std::unexpected(type.error());
    }
    auto knob = Reader::integer_of(pair[1], path + "[1]", -int64_max, int64_max);
    if (!knob) {
      return std::unexpected(knob.error());
    }
    choice.knobs.emplace_back(*type, *knob);
  }
  return choice;
}

Result<HeuristicMode> read_mode(const Reader& document) {
  auto name = document.string("mode");
  if (!name) {
    return std::unexpected(name.error());
  }
  for (HeuristicMode mode : {HeuristicMode::A, HeuristicMode::B, HeuristicMode::Fallback}) {
    if (*name == to_string(mode)) {
      return mode;
    }
  }
  return refuse(document.at("mode"), "A, B or Fallback", "\"" + *name + "\"");
}

// An array of note names as to_string writes them; a name this build does not know (a note of
// a newer dnngraph) is refused.
template <class Note>
Result<std::vector<Note>> read_notes(const Reader& document, std::string_view name) {
  auto value = document.member(name);
  if (!value) {
    return std::unexpected(value.error());
  }
  const std::string path = document.at(name);
  if (!(*value)->is_array()) {
    return refuse(path, "an array of note names", shown(**value));
  }
  std::vector<Note> notes;
  const json::array& names = (*value)->get_array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string element = path + "[" + std::to_string(i) + "]";
    if (!names[i].is_string()) {
      return refuse(element, "a note name", shown(names[i]));
    }
    bool found = false;
    for (std::uint8_t raw = 0; is_known(static_cast<Note>(raw)); ++raw) {
      if (names[i].get_string() == to_string(static_cast<Note>(raw))) {
        notes.push_back(static_cast<Note>(raw));
        found = true;
        break;
      }
    }
    if (!found) {
      return refuse(element, "a note name this dnngraph knows", shown(names[i]));
    }
  }
  return notes;
}

template <class Note>
json::array note_names(const std::vector<Note>& notes) {
  json::array names;
  for (Note note : notes) {
    names.emplace_back(to_string(note));
  }
  return names;
}

Result<std::optional<std::string>> read_cudnn_plan(const Reader& document,
                                                   const json::object& object) {
  const bool has_plan = object.contains("cudnn_plan");
  if (has_plan != object.contains("cudnn_plan_digest")) {
    return refuse(document.at(has_plan ? "cudnn_plan_digest" : "cudnn_plan"),
                  "a member (cudnn_plan and cudnn_plan_digest go together)",
                  "none (it is missing)");
  }
  if (!has_plan) {
    return std::nullopt;
  }
  auto plan = document.string("cudnn_plan");
  if (!plan) {
    return std::unexpected(plan.error());
  }
  auto written = document.string("cudnn_plan_digest");
  if (!written) {
    return std::unexpected(written.error());
  }
  if (const std::string found = digest(*plan); found != *written) {
    return refuse(document.at("cudnn_plan_digest"),
                  "the digest of cudnn_plan (" + found + "): the plan was changed or cut short",
                  "\"" + *written + "\"");
  }
  return std::optional<std::string>(std::move(*plan));
}

}  // namespace

std::string to_json(const PlanDocument& document) {
  json::array knobs;
  for (const auto& [type, value] : document.engine.knobs) {
    knobs.push_back(json::array{type, value});
  }
  json::object out{
      {"format", document.format},
      {"format_version", document.format_version},
      {"cudnn_version", document.cudnn_version},
      {"gpu", json::object{{"name", document.gpu.name},
                           {"major", document.gpu.major},
                           {"minor", document.gpu.minor}}},
      {"key", document.key},
      {"dynamic_shape", document.dynamic_shape},
      {"mode", to_string(document.mode)},
      {"engine", json::object{{"id", document.engine.engine_id}, {"knobs", std::move(knobs)}}},
      {"numerical_notes", note_names(document.numerical_notes)},
      {"behavior_notes", note_names(document.behavior_notes)},
  };
  if (document.cudnn_plan) {
    out["cudnn_plan"] = *document.cudnn_plan;
    out["cudnn_plan_digest"] = digest(*document.cudnn_plan);
  }
  return json::serialize(out);
}

Result<PlanDocument> parse_plan_document(std::string_view text) {
  if (text.size() > PlanDocument::max_bytes) {
    return refuse("the document", "at most " + std::to_string(PlanDocument::max_bytes) + " bytes",
                  std::to_string(text.size()) + " bytes");
  }
  boost::system::error_code ec;
  const json::value value = json::parse(text, ec);
  if (ec) {
    return make_error(ErrorCode::InvalidJson,
                      "plan document: does not parse as JSON: " + ec.message() +
                          " (is it what serialize() wrote?)");
  }
  auto object = object_of(value, "the document");
  if (!object) {
    return std::unexpected(object.error());
  }
  const Reader document(**object, "");
  auto format = document.string("format");
  if (!format) {
    return std::unexpected(format.error());
  }
  if (*format != PlanDocument::format) {
    return refuse(".format", "\"" + std::string(PlanDocument::format) + "\"",
                  "\"" + *format + "\"");
  }
  auto version = document.integer("format_version", 0, int64_max);
  if (!version) {
    return std::unexpected(version.error());
  }
  if (*version != PlanDocument::format_version) {
    return refuse(
        ".format_version",
        std::to_string(PlanDocument::format_version) + " (the one this dnngraph writes and reads)",
        std::to_string(*version));
  }
  if (auto ok = document.only({"format", "format_version", "cudnn_version", "gpu", "key",
                               "dynamic_shape", "mode", "engine", "numerical_notes",
                               "behavior_notes", "cudnn_plan", "cudnn_plan_digest"});
      !ok) {
    return std::unexpected(ok.error());
  }
  PlanDocument out;
  auto cudnn = document.integer("cudnn_version", 0, int64_max);
  if (!cudnn) {
    return std::unexpected(cudnn.error());
  }
  out.cudnn_version = *cudnn;
  auto gpu = read_gpu(document);
  if (!gpu) {
    return std::unexpected(gpu.error());
  }
  out.gpu = std::move(*gpu);
  auto key = document.string("key");
  if (!key) {
    return std::unexpected(key.error());
  }
  out.key = std::move(*key);
  auto dynamic = document.boolean("dynamic_shape");
  if (!dynamic) {
    return std::unexpected(dynamic.error());
  }
  out.dynamic_shape = *dynamic;
  auto mode = read_mode(document);
  if (!mode) {
    return std::unexpected(mode.error());
  }
  out.mode = *mode;
  auto engine = read_engine(document);
  if (!engine) {
    return std::unexpected(engine.error());
  }
  out.engine = std::move(*engine);
  auto numerical = read_notes<NumericalNote>(document, "numerical_notes");
  if (!numerical) {
    return std::unexpected(numerical.error());
  }
  out.numerical_notes = std::move(*numerical);
  auto behavior = read_notes<BehaviorNote>(document, "behavior_notes");
  if (!behavior) {
    return std::unexpected(behavior.error());
  }
  out.behavior_notes = std::move(*behavior);
  auto plan = read_cudnn_plan(document, **object);
  if (!plan) {
    return std::unexpected(plan.error());
  }
  out.cudnn_plan = std::move(*plan);
  return out;
}

}  // namespace dnngraph::detail
