// Kernel cache JSON with Boost.JSON (no exceptions: error_code overloads only). Two passes over
// an outside document: a strict one (duplicate members, non-finite numbers, with the JSON path)
// and the ordinary parse into a value the schema check walks.
#include "detail/cache/kernel_cache_json.hpp"

#include "detail/cache/kernel_cache_schema.hpp"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <gsl/util>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace dnngraph::detail {

namespace {

namespace json = boost::json;

// basic_parser handler that refuses what Boost.JSON's value parser lets through silently:
// a member name twice in one object (json::parse keeps the last, cuDNN's RapidJSON the first,
// so a checker reading one and cuDNN the other could be bypassed) and numbers that are not
// finite (an exponent beyond double's range). It records where, as a JSON path.
class StrictReader {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  // Empty while the document is acceptable; the refusal otherwise.
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

  bool on_document_begin(boost::system::error_code& /*ec*/) { return true; }
  bool on_document_end(boost::system::error_code& /*ec*/) { return true; }
  bool on_object_begin(boost::system::error_code& /*ec*/) { return open(true); }
  bool on_object_end(std::size_t /*n*/, boost::system::error_code& /*ec*/) { return close(); }
  bool on_array_begin(boost::system::error_code& /*ec*/) { return open(false); }
  bool on_array_end(std::size_t /*n*/, boost::system::error_code& /*ec*/) { return close(); }
  bool on_key_part(json::string_view s, std::size_t /*n*/, boost::system::error_code& /*ec*/) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t /*n*/, boost::system::error_code& ec) {
    key_.append(s.data(), s.size());
    Frame& frame = frames_.back();
    if (!frame.keys.insert(key_).second) {
      const std::string container = path(frames_.size() - 1);
      problem_ = container + (container.empty() ? "" : ".") + key_ +
                 ": expected each member name once per object, given it twice (cuDNN would "
                 "read the first, a checker the last)";
      ec = json::error::syntax;
      return false;
    }
    frame.key = std::move(key_);
    key_.clear();
    return true;
  }
  bool on_string_part(json::string_view /*s*/, std::size_t /*n*/,
                      boost::system::error_code& /*ec*/) {
    return true;
  }
  bool on_string(json::string_view /*s*/, std::size_t /*n*/, boost::system::error_code& /*ec*/) {
    return value_done();
  }
  bool on_number_part(json::string_view /*s*/, boost::system::error_code& /*ec*/) { return true; }
  bool on_int64(std::int64_t /*i*/, json::string_view /*s*/, boost::system::error_code& /*ec*/) {
    return value_done();
  }
  bool on_uint64(std::uint64_t /*u*/, json::string_view /*s*/, boost::system::error_code& /*ec*/) {
    return value_done();
  }
  bool on_double(double d, json::string_view s, boost::system::error_code& ec) {
    if (!std::isfinite(d)) {
      const std::string where = path(frames_.size());
      problem_ = (where.empty() ? "the document" : where) + ": expected a finite number, given " +
                 std::string(s.data(), s.size()) + " (beyond the range of a double)";
      ec = json::error::syntax;
      return false;
    }
    return value_done();
  }
  bool on_bool(bool /*b*/, boost::system::error_code& /*ec*/) { return value_done(); }
  bool on_null(boost::system::error_code& /*ec*/) { return value_done(); }
  bool on_comment_part(json::string_view /*s*/, boost::system::error_code& /*ec*/) { return true; }
  bool on_comment(json::string_view /*s*/, boost::system::error_code& /*ec*/) { return true; }

 private:
  struct Frame {
    bool object = false;
    std::size_t index = 0;       // arrays: the element being read
    std::string key;             // objects: the member being read
    std::set<std::string> keys;  // objects: the members seen so far
  };

  bool open(bool object) {
    frames_.push_back(Frame{object, 0, {}, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value_done();
  }
  bool value_done() {
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().index;
    }
    return true;
  }
  // The path of the value being read in the first `depth` containers, in the form
  // `kernel_cache[0].key.type`; empty for the document itself.
  [[nodiscard]] std::string path(std::size_t depth) const {
    std::string text;
    for (std::size_t i = 0; i < depth && i < frames_.size(); ++i) {
      const Frame& frame = frames_[i];
      if (frame.object) {
        text += (text.empty() ? "" : ".") + frame.key;
      } else {
        text += "[" + std::to_string(frame.index) + "]";
      }
    }
    return text;
  }

  std::vector<Frame> frames_;
  std::string key_;
  std::string problem_;
};

Result<void> read_strictly(std::string_view text) {
  json::basic_parser<StrictReader> reader{json::parse_options{}};
  boost::system::error_code ec;
  const std::size_t used = reader.write_some(false, text.data(), text.size(), ec);
  if (!reader.handler().problem().empty()) {
    return make_error(ErrorCode::InvalidJson, "kernel cache JSON: " + reader.handler().problem());
  }
  if (!ec && used < text.size()) {
    ec = json::error::extra_data;
  }
  if (ec) {
    return make_error(ErrorCode::InvalidJson, "kernel cache JSON does not parse: " + ec.message() +
                                                  " (at byte " + std::to_string(used) +
                                                  " of a document of " +
                                                  std::to_string(text.size()) + " bytes)");
  }
  return {};
}

// The value serialized with object members in name order and integral doubles written as
// integers (1.0 as 1), so two keys cuDNN reads alike compare equal.
std::string canonical(const json::value& value) {
  if (const auto* object = value.if_object()) {
    std::vector<const json::key_value_pair*> members;
    for (const auto& member : *object) {
      members.push_back(&member);
    }
    std::ranges::sort(members, {}, [](const json::key_value_pair* m) { return m->key(); });
    std::string text = "{";
    for (const auto* member : members) {
      text += (text.size() > 1 ? "," : "") + json::serialize(json::string(member->key())) + ":" +
              canonical(member->value());
    }
    return text + "}";
  }
  if (const auto* array = value.if_array()) {
    std::string text = "[";
    for (const auto& element : *array) {
      text += (text.size() > 1 ? "," : "") + canonical(element);
    }
    return text + "]";
  }
  // Integers up to 2^53 are exact in a double.
  constexpr double exact = 9007199254740992.0;
  if (const double* number = value.if_double();
      number != nullptr && std::trunc(*number) == *number && std::fabs(*number) <= exact) {
    return std::to_string(static_cast<std::int64_t>(*number));
  }
  return json::serialize(value);
}

// json::serialize(value) into a buffer sized for the caller's text at once (a document of
// compiled kernels is mostly base64 that serializes to the same bytes): json::serialize grows
// its string step by step, copying a large document several times over.
std::string serialized(const json::value& value, std::size_t size_hint) {
  json::serializer writer;
  writer.reset(&value);
  std::string text;
  std::size_t capacity = std::max<std::size_t>(size_hint, 64);
  while (!writer.done()) {
    // Keeps what was written (the string's size) and writes into the new room, which is never
    // cleared first.
    const std::size_t kept = text.size();
    text.resize_and_overwrite(capacity, [&writer, kept](char* data, std::size_t room) {
      return kept + writer.read(data + kept, room - kept).size();
    });
    capacity *= 2;
  }
  return text;
}

// Whether the operation graph of a schema-checked document has a norm forward or backward node.
bool has_norm_node(const json::value& doc) {
  const json::value* graph = doc.get_object().if_contains("operationGraph");
  const json::value* nodes =
      graph != nullptr && graph->is_object() ? graph->get_object().if_contains("nodes") : nullptr;
  if (nodes == nullptr || !nodes->is_array()) {
    return false;
  }
  for (const json::value& node : nodes->get_array()) {
    const json::value* operation =
        node.is_object() ? node.get_object().if_contains("operation") : nullptr;
    if (operation != nullptr && operation->is_string() &&
        (operation->get_string() == "CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR" ||
         operation->get_string() == "CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR")) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<CheckedCacheDocument> check_cache_document(std::string_view text) {
  if (auto strict = read_strictly(text); !strict) {
    return std::unexpected(strict.error());
  }
  boost::system::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec) {  // read_strictly accepted the same syntax; kept so no path reads an unparsed value
    return make_error(ErrorCode::InvalidJson, "kernel cache JSON does not parse: " + ec.message());
  }
  if (auto schema = check_cache_schema(doc); !schema) {
    return std::unexpected(schema.error());
  }
  // cuDNN keeps both of two equal entries while the entry list (and size()) counts one. Keys
  // are compared in a canonical form: what cuDNN parses the same is the same key.
  // The schema check guarantees the shape read here; the if_ accessors keep it free of throws.
  std::map<std::string, std::size_t> first_index;
  const json::value* list = doc.get_object().if_contains("kernel_cache");
  const std::size_t count = list != nullptr && list->is_array() ? list->get_array().size() : 0;
  for (std::size_t i = 0; i < count; ++i) {
    const json::object* entry = list->get_array()[i].if_object();
    const json::value* key = entry != nullptr ? entry->if_contains("key") : nullptr;
    if (key == nullptr) {
      return make_error(ErrorCode::InvalidJson, "kernel cache JSON: kernel_cache[" +
                                                    std::to_string(i) +
                                                    "]: expected an object with a key");
    }
    if (auto [seen, fresh] = first_index.emplace(canonical(*key), i); !fresh) {
      return make_error(ErrorCode::InvalidJson,
                        "kernel cache JSON: kernel_cache[" + std::to_string(i) +
                            "].key: expected a key no other entry has, given the key of "
                            "kernel_cache[" +
                            std::to_string(seen->second) + "] again");
    }
  }
  return CheckedCacheDocument{serialized(doc, text.size()), gsl::narrow_cast<std::int64_t>(count),
                              has_norm_node(doc)};
}

CheckedCacheDocument without_entries(const CheckedCacheDocument& document) {
  // The text was serialized by check_cache_document: it parses, and the schema held.
  json::value doc = json::parse(document.text);
  doc.get_object()["kernel_cache"] = json::array();
  return CheckedCacheDocument{serialized(doc, document.text.size()), 0, document.norm};
}

Result<MergedCacheDocument> merge_cache_documents(std::string_view ours, std::string_view stored,
                                                  std::size_t limit) {
  auto checked = check_cache_document(ours);
  if (!checked) {
    return std::unexpected(checked.error());
  }
  MergedCacheDocument alone{std::string(ours), 0};
  auto other = check_cache_document(stored);
  if (!other) {
    return alone;
  }
  // Both texts were serialized by check_cache_document: they parse, and the schema held.
  json::value doc = json::parse(checked->text);
  const json::value theirs = json::parse(other->text);
  json::object& mine = doc.get_object();
  const json::object& their = theirs.get_object();
  for (const std::string_view member : {"cudnnVersion", "schemaVersion", "operationGraph"}) {
    const json::value* a = mine.if_contains(member);
    const json::value* b = their.if_contains(member);
    if (a == nullptr || b == nullptr || *a != *b) {
      return alone;
    }
  }
  json::array* entries = mine["kernel_cache"].if_array();
  const json::value* their_list = their.if_contains("kernel_cache");
  if (entries == nullptr || their_list == nullptr || !their_list->is_array()) {
    return alone;
  }
  // check_cache_document saw a key in every entry; the if_ accessors keep this free of throws.
  const auto key_text = [](const json::value& entry) {
    const json::object* object = entry.if_object();
    const json::value* key = object != nullptr ? object->if_contains("key") : nullptr;
    return key != nullptr ? canonical(*key) : std::string();
  };
  std::set<std::string> keys;
  for (const json::value& entry : *entries) {
    keys.insert(key_text(entry));
  }
  std::int64_t added = 0;
  for (const json::value& entry : their_list->get_array()) {
    if (keys.insert(key_text(entry)).second) {
      entries->push_back(entry);
      ++added;
    }
  }
  if (added == 0) {
    return alone;
  }
  std::string text = serialized(doc, ours.size() + stored.size());
  if (text.size() > limit) {
    return alone;
  }
  return MergedCacheDocument{std::move(text), added};
}

}  // namespace dnngraph::detail
