// Checks of one JSON value each, for the kernel cache schema (json_checks.hpp).
#include "detail/cache/json_checks.hpp"

#include <boost/json.hpp>
#include <gsl/util>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail::json_checks {

namespace json = boost::json;

namespace {

// Set per document by check_cache_schema, through UnknownMembersAllowed.
thread_local bool unknown_members_allowed = false;

}  // namespace

UnknownMembersAllowed::UnknownMembersAllowed(bool allowed) { unknown_members_allowed = allowed; }

UnknownMembersAllowed::~UnknownMembersAllowed() { unknown_members_allowed = false; }

std::string shown(const json::value& value) {
  constexpr std::size_t longest = 60;
  std::string text = json::serialize(value);
  if (text.size() > longest) {
    text.resize(longest - 3);
    text += "...";
  }
  return text;
}

std::unexpected<Error> refuse(const std::string& path, std::string_view expected,
                              std::string_view given) {
  return make_error(ErrorCode::InvalidJson, "kernel cache JSON: " + path + ": expected " +
                                                std::string(expected) + ", given " +
                                                std::string(given));
}

std::string member_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

std::string element_path(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string listed(Names names) {
  std::string text;
  for (const auto name : names) {
    text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

Result<const json::object*> object_at(const json::value& value, const std::string& path) {
  const json::object* object = value.if_object();
  if (object == nullptr) {
    return refuse(path.empty() ? "the document" : path, "an object", shown(value));
  }
  return object;
}

Result<const json::array*> array_at(const json::value& value, const std::string& path) {
  const json::array* array = value.if_array();
  if (array == nullptr) {
    return refuse(path, "an array", shown(value));
  }
  return array;
}

Result<void> only_known_members(const json::object& object, const std::string& path, Names known) {
  if (unknown_members_allowed) {
    return {};
  }
  for (const auto& member : object) {
    if (std::ranges::find(known, std::string_view(member.key())) == known.end()) {
      return refuse(member_path(path, member.key()), "only the members " + listed(known),
                    "an unknown member");
    }
  }
  return {};
}

Result<const json::value*> required_member(const json::object& object, const std::string& path,
                                           std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr) {
    return refuse(member_path(path, name), "a member", "none (it is missing)");
  }
  return value;
}

Result<Members> members_of(const json::value& value, const std::string& path, Names known,
                           std::size_t required) {
  auto object = object_at(value, path);
  if (!object) {
    return std::unexpected(object.error());
  }
  if (auto ok = only_known_members(**object, path, known); !ok) {
    return std::unexpected(ok.error());
  }
  Members members;
  for (std::size_t i = 0; i < known.size(); ++i) {
    const json::value* member = (**object).if_contains(known[i]);
    if (member == nullptr && i < required) {
      return refuse(member_path(path, known[i]), "a member", "none (it is missing)");
    }
    if (member != nullptr) {
      members.emplace(known[i], member);
    }
  }
  return members;
}

Result<std::int64_t> integer_at(const json::value& value, const std::string& path,
                                std::int64_t lowest, std::int64_t highest) {
  const std::string expected =
      "an integer in " + std::to_string(lowest) + ".." + std::to_string(highest);
  std::int64_t number = 0;
  if (const auto* i = value.if_int64()) {
    number = *i;
  } else if (const auto* u = value.if_uint64(); u != nullptr && *u <= std::uint64_t(int64_max)) {
    number = gsl::narrow_cast<std::int64_t>(*u);
  } else {
    return refuse(path, expected, shown(value));
  }
  if (number < lowest || number > highest) {
    return refuse(path, expected, shown(value));
  }
  return number;
}

Result<void> number_at(const json::value& value, const std::string& path) {
  // read_strictly refused non-finite doubles already; integers are finite.
  if (!value.is_number()) {
    return refuse(path, "a number", shown(value));
  }
  return {};
}

Result<void> boolean_at(const json::value& value, const std::string& path) {
  if (!value.is_bool()) {
    return refuse(path, "true or false", shown(value));
  }
  return {};
}

Result<void> one_of(const json::value& value, const std::string& path, Names names,
                    std::string_view what) {
  const json::string* text = value.if_string();
  if (text == nullptr || std::ranges::find(names, std::string_view(*text)) == names.end()) {
    return refuse(path, what, shown(value));
  }
  return {};
}

Result<std::vector<std::int64_t>> integers_at(const json::value& value, const std::string& path,
                                              std::size_t shortest, std::size_t longest,
                                              std::int64_t lowest, std::int64_t highest) {
  auto array = array_at(value, path);
  if (!array) {
    return std::unexpected(array.error());
  }
  if ((*array)->size() < shortest || (*array)->size() > longest) {
    return refuse(path,
                  "an array of " + std::to_string(shortest) +
                      (shortest == longest ? "" : ".." + std::to_string(longest)) + " integers",
                  std::to_string((*array)->size()) + " elements");
  }
  std::vector<std::int64_t> numbers;
  numbers.reserve((*array)->size());
  for (std::size_t i = 0; i < (*array)->size(); ++i) {
    auto number = integer_at((**array)[i], element_path(path, i), lowest, highest);
    if (!number) {
      return std::unexpected(number.error());
    }
    numbers.push_back(*number);
  }
  return numbers;
}

}  // namespace dnngraph::detail::json_checks
