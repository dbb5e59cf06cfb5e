// The kernel_cache entries of a kernel cache document, checked against what cuDNN 9.19 reads:
// each entry's key (its members from libcudnn_graph.so, its operation graph checked by
// kernel_cache_schema.cpp) and its value.
//
// Entry values (cuDNN's compiled kernels: base64 cubins and parameter patches) are checked for
// their shape only; they are code for the GPU and cannot be verified here (docs/kernel-cache.md).
#include "detail/cache/kernel_cache_schema_parts.hpp"

#include "detail/cache/json_checks.hpp"

#include <boost/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dnngraph::detail::cache_schema {

namespace {

namespace json = boost::json;

using namespace json_checks;

constexpr std::array<std::string_view, 2> entry_members{"key", "value"};
constexpr std::array<std::string_view, 9> key_members{
    "type",  "engineId", "knobChoices",     "operationGraph",      "bpa_a",
    "bpa_b", "bpa_c",    "shader_hash_key", "check_specialization"};

// Whether every byte is a base64 digit (A-Z, a-z, 0-9, + or /). A cubin is most of a document:
// the loop has no early exit and no table, so the compiler vectorizes it (measured 6x faster
// than a table look-up per byte, and find_first_not_of compared each byte with the alphabet).
bool base64_digits_only(std::string_view text) {
  bool all = true;
  for (const char ch : text) {
    const auto c = static_cast<std::uint8_t>(ch);
    all &= static_cast<std::uint8_t>(c - 'A') < 26 || static_cast<std::uint8_t>(c - 'a') < 26 ||
           static_cast<std::uint8_t>(c - '0') < 10 || c == '+' || c == '/';
  }
  return all;
}

bool is_base64(std::string_view text) {
  const std::size_t data = text.find_last_not_of('=') + 1;  // npos + 1 == 0 for all '='
  return text.size() % 4 == 0 && text.size() - data <= 2 &&
         base64_digits_only(text.substr(0, data));
}

// One compiled kernel of an entry's value. Its members were read from libcudnn_graph.so's
// RuntimeKernel::from_json, not from a document (the CPU compiles no kernels): their types are
// checked, members not listed pass.
Result<void> check_kernel(const json::value& value, const std::string& path) {
  auto object = object_at(value, path);
  if (!object) {
    return std::unexpected(object.error());
  }
  for (const std::string_view name : {"cubin", "kernelName"}) {
    const json::value* member = (**object).if_contains(name);
    if (member != nullptr && !member->is_string()) {
      return refuse(member_path(path, name), "a string", shown(*member));
    }
  }
  if (const json::value* cubin = (**object).if_contains("cubin");
      cubin != nullptr && !is_base64(cubin->get_string())) {
    return refuse(member_path(path, "cubin"), "base64 text", shown(*cubin));
  }
  const json::value* params = (**object).if_contains("kernelParams");
  if (params == nullptr) {
    return {};
  }
  const std::string params_path = member_path(path, "kernelParams");
  auto params_object = object_at(*params, params_path);
  if (!params_object) {
    return std::unexpected(params_object.error());
  }
  if (const json::value* raw = (**params_object).if_contains("rawData");
      raw != nullptr && (!raw->is_string() || !is_base64(raw->get_string()))) {
    return refuse(member_path(params_path, "rawData"), "base64 text", shown(*raw));
  }
  const json::value* offsets = (**params_object).if_contains("offsets");
  if (offsets == nullptr) {
    return {};
  }
  const std::string offsets_path = member_path(params_path, "offsets");
  auto offset_list = array_at(*offsets, offsets_path);
  if (!offset_list) {
    return std::unexpected(offset_list.error());
  }
  for (std::size_t i = 0; i < (*offset_list)->size(); ++i) {
    const std::string at = element_path(offsets_path, i);
    auto offset = object_at((**offset_list)[i], at);
    if (!offset) {
      return std::unexpected(offset.error());
    }
    for (const std::string_view name : {"value", "size", "idx_shape_update_fn"}) {
      if (const json::value* number = (**offset).if_contains(name); number != nullptr) {
        if (auto ok = integer_at(*number, member_path(at, name), 0, int32_max); !ok) {
          return std::unexpected(ok.error());
        }
      }
    }
    for (const std::string_view name : {"update_as", "name"}) {
      if (const json::value* text = (**offset).if_contains(name);
          text != nullptr && !text->is_string()) {
        return refuse(member_path(at, name), "a string", shown(*text));
      }
    }
  }
  return {};
}

// Knob type -> choice, as cuDNN reads them (it takes each choice as an int).
Result<void> check_knob_choices(const json::value& value, const std::string& path) {
  auto knobs = object_at(value, path);
  if (!knobs) {
    return std::unexpected(knobs.error());
  }
  for (const auto& knob : **knobs) {
    const std::string at = member_path(path, knob.key());
    if (auto choice = integer_at(knob.value(), at, -int32_max, int32_max); !choice) {
      return std::unexpected(choice.error());
    }
  }
  return {};
}

Result<void> check_key(const json::value& value, const std::string& path) {
  auto found = members_of(value, path, key_members, 1);
  if (!found) {
    return std::unexpected(found.error());
  }
  // cuDNN 9.19 picks the key class from a table by "type" without a bound (3 crashed).
  if (auto ok = integer_at(*found->at("type"), member_path(path, "type"), 0, 2); !ok) {
    return std::unexpected(ok.error());
  }
  for (const auto& [name, member] : *found) {
    const std::string at = member_path(path, name);
    Result<void> ok;
    if (name == "engineId" || name == "bpa_a" || name == "bpa_b" || name == "bpa_c") {
      ok = passed(integer_at(*member, at, 0, int32_max));
    } else if (name == "shader_hash_key") {
      if (!member->is_uint64() && !(member->is_int64() && member->get_int64() >= 0)) {
        ok = refuse(at, "an unsigned 64-bit integer", shown(*member));
      }
    } else if (name == "check_specialization") {
      if (!member->is_bool() && !member->is_int64()) {
        ok = refuse(at, "true, false or an integer", shown(*member));
      }
    } else if (name == "operationGraph") {
      ok = check_operation_graph(*member, at);
    } else if (name == "knobChoices") {
      ok = check_knob_choices(*member, at);
    }
    if (!ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace

Result<void> check_entry(const json::value& value, const std::string& path) {
  auto found = members_of(value, path, entry_members, entry_members.size());
  if (!found) {
    return std::unexpected(found.error());
  }
  if (auto ok = check_key(*found->at("key"), member_path(path, "key")); !ok) {
    return ok;
  }
  const std::string value_path = member_path(path, "value");
  auto list = array_at(*found->at("value"), value_path);
  if (!list) {
    return std::unexpected(list.error());
  }
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    if (auto ok = check_kernel((**list)[i], element_path(value_path, i)); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace dnngraph::detail::cache_schema
