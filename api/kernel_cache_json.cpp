// Kernel cache JSON parsing with Boost.JSON (no exceptions: error_code overloads only).
#include "api/kernel_cache_json.hpp"

#include <boost/json.hpp>

#include <functional>

namespace dnngraph::detail {

Result<CacheEntries> parse_cache_entries(std::string_view json) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(json, ec);
  if (ec) {
    return make_error(ErrorCode::InvalidJson, "kernel cache JSON does not parse: " + ec.message() +
                                                  " (document of " + std::to_string(json.size()) +
                                                  " bytes)");
  }
  const boost::json::object* root = doc.if_object();
  if (root == nullptr) {
    return make_error(ErrorCode::InvalidJson, "kernel cache JSON: the document is not an object");
  }
  const boost::json::value* list = root->if_contains("kernel_cache");
  if (list == nullptr || !list->is_array()) {
    return make_error(ErrorCode::InvalidJson,
                      "kernel cache JSON: no \"kernel_cache\" array at the top level");
  }
  CacheEntries entries;
  const boost::json::array& array = list->get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const boost::json::object* entry = array[i].if_object();
    const boost::json::value* key = entry ? entry->if_contains("key") : nullptr;
    const boost::json::value* value = entry ? entry->if_contains("value") : nullptr;
    if (key == nullptr || value == nullptr || !key->is_object()) {
      return make_error(ErrorCode::InvalidJson,
                        "kernel cache JSON: entry " + std::to_string(i) +
                            " is not an object with a \"key\" object and a \"value\"");
    }
    entries.insert_or_assign(boost::json::serialize(*key),
                             std::hash<std::string>{}(boost::json::serialize(*value)));
  }
  return entries;
}

}  // namespace dnngraph::detail
