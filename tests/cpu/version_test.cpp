// Which cuDNN runs: the loaded library's version, path and why it was taken, and Handle::create's
// refusal of a library older than the oldest dnngraph supports.
#define BOOST_TEST_MODULE version
#include <boost/test/unit_test.hpp>

#include "detail/cudnn/version_check.hpp"

#include "api/dnngraph.hpp"

#include <filesystem>
#include <string>

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_loaded_library_path_names_an_existing_libcudnn) {
  const std::string path = dnngraph::cudnn_library_path();
  BOOST_TEST_MESSAGE("cuDNN " << dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version())
                              << " loaded from " << path);
  BOOST_TEST(contains(std::filesystem::path(path).filename().string(), "libcudnn.so"), path);
  BOOST_TEST(std::filesystem::exists(path), path);
}

BOOST_AUTO_TEST_CASE(the_loaded_library_says_why_it_was_taken) {
  const std::string source = dnngraph::cudnn_library_source();
  BOOST_TEST_MESSAGE("taken because: " << source);
  BOOST_TEST(!source.empty());
  BOOST_TEST(!contains(source, "no usable libcudnn"), source);
}

BOOST_AUTO_TEST_CASE(a_loaded_cudnn_older_than_the_minimum_is_refused_naming_both_and_the_path) {
  auto checked = dnngraph::detail::check_loaded_cudnn(91900, 91400, "/usr/lib/libcudnn.so.9",
                                                      "the system's dynamic loader");
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST((checked.error().code == dnngraph::ErrorCode::VersionTooOld));
  const std::string& m = checked.error().message;
  BOOST_TEST(contains(m, "needs cuDNN 9.19.0 or newer"), m);
  BOOST_TEST(contains(m, "loaded cuDNN is 9.14.0"), m);
  BOOST_TEST(contains(m, "/usr/lib/libcudnn.so.9"), m);
  BOOST_TEST(contains(m, "the system's dynamic loader"), m);
  BOOST_TEST(contains(m, "DNNGRAPH_CUDNN_LIB"), m);
}

BOOST_AUTO_TEST_CASE(the_minimum_or_a_newer_loaded_cudnn_is_accepted_whatever_the_headers) {
  BOOST_TEST(dnngraph::cudnn_minimum_version() == 91900);
  BOOST_TEST(dnngraph::detail::check_loaded_cudnn(91900, 91900, "x", "y").has_value());
  BOOST_TEST(dnngraph::detail::check_loaded_cudnn(91900, 92801, "x", "y").has_value());
}

BOOST_AUTO_TEST_CASE(choosing_another_library_after_the_first_load_is_refused) {
  BOOST_TEST_REQUIRE(dnngraph::cudnn_runtime_version() > 0);  // loads it
  auto other = dnngraph::set_cudnn_library("/nonexistent/libcudnn.so.9");
  BOOST_TEST_REQUIRE(!other.has_value());
  BOOST_TEST((other.error().code == dnngraph::ErrorCode::InvalidState));
  BOOST_TEST(contains(other.error().message, dnngraph::cudnn_library_path()),
             other.error().message);
  auto same = dnngraph::set_cudnn_library(dnngraph::cudnn_library_path());
  BOOST_TEST(same.has_value(), (same ? "" : same.error().message));
}

BOOST_AUTO_TEST_CASE(handle_create_here_fails_for_want_of_a_device_not_for_the_version) {
  // The library here is cuDNN 9.19 or newer; without a GPU cudnnCreate fails instead.
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    BOOST_TEST((handle.error().code != dnngraph::ErrorCode::VersionTooOld), handle.error().message);
  }
}
