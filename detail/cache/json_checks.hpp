// Checks of one JSON value each, for the kernel cache schema (internal to detail/cache/): every
// check returns the value it read or an InvalidJson refusal naming the JSON path, what was
// expected and what was given.
#pragma once

#include "api/error.hpp"

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail::json_checks {

using Names = std::span<const std::string_view>;

inline constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// The member names the checks are given are those cuDNN 9.19 writes. A document of another cuDNN
// may carry members 9.19 lacks: while one of these lives (check_cache_schema makes one per
// document), such members pass unchecked on this thread, while every member named is still
// checked. Not yet measured against another version's documents.
class UnknownMembersAllowed {
 public:
  explicit UnknownMembersAllowed(bool allowed);
  UnknownMembersAllowed(const UnknownMembersAllowed&) = delete;
  UnknownMembersAllowed& operator=(const UnknownMembersAllowed&) = delete;
  ~UnknownMembersAllowed();  // refused again on every way out
};

// A value as the message shows it: its JSON, shortened.
[[nodiscard]] std::string shown(const boost::json::value& value);

[[nodiscard]] std::unexpected<Error> refuse(const std::string& path, std::string_view expected,
                                            std::string_view given);

[[nodiscard]] std::string member_path(const std::string& path, std::string_view name);
[[nodiscard]] std::string element_path(const std::string& path, std::size_t index);

// The names, comma separated.
[[nodiscard]] std::string listed(Names names);

[[nodiscard]] Result<const boost::json::object*> object_at(const boost::json::value& value,
                                                           const std::string& path);
[[nodiscard]] Result<const boost::json::array*> array_at(const boost::json::value& value,
                                                         const std::string& path);

// Refuses the first member whose name is not one of `known` (in a cuDNN 9.19 document).
[[nodiscard]] Result<void> only_known_members(const boost::json::object& object,
                                              const std::string& path, Names known);

[[nodiscard]] Result<const boost::json::value*> required_member(const boost::json::object& object,
                                                                const std::string& path,
                                                                std::string_view name);

// An object's members by name, after checking it is an object, has no member beyond `known`
// and has the first `required` of them. Members it lacks are absent from the map.
using Members = std::map<std::string_view, const boost::json::value*>;
[[nodiscard]] Result<Members> members_of(const boost::json::value& value, const std::string& path,
                                         Names known, std::size_t required);

// A check's value dropped: only whether it passed.
template <class T>
[[nodiscard]] Result<void> passed(const Result<T>& checked) {
  if (!checked) {
    return std::unexpected(checked.error());
  }
  return {};
}

[[nodiscard]] Result<std::int64_t> integer_at(const boost::json::value& value,
                                              const std::string& path, std::int64_t lowest,
                                              std::int64_t highest);
[[nodiscard]] Result<void> number_at(const boost::json::value& value, const std::string& path);
[[nodiscard]] Result<void> boolean_at(const boost::json::value& value, const std::string& path);

// A string that is one of `names`; `what` is what the refusal says was expected.
[[nodiscard]] Result<void> one_of(const boost::json::value& value, const std::string& path,
                                  Names names, std::string_view what);

// An array of `shortest`..`longest` integers, each in `lowest`..`highest`.
[[nodiscard]] Result<std::vector<std::int64_t>> integers_at(
    const boost::json::value& value, const std::string& path, std::size_t shortest,
    std::size_t longest, std::int64_t lowest, std::int64_t highest);

}  // namespace dnngraph::detail::json_checks
