// Which cuDNN runs: the loaded library's version and path, and Handle::create's refusal of a
// library older than the headers dnngraph was compiled against.
#define BOOST_TEST_MODULE version
#include <boost/test/unit_test.hpp>

#include "api/version_check.hpp"

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

BOOST_AUTO_TEST_CASE(a_loaded_cudnn_older_than_the_headers_is_refused_naming_both_and_the_path) {
  auto checked = dnngraph::detail::check_loaded_cudnn(92700, 91400, "/usr/lib/libcudnn.so.9");
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST((checked.error().code == dnngraph::ErrorCode::VersionTooOld));
  const std::string& m = checked.error().message;
  BOOST_TEST(contains(m, "compiled against cuDNN 9.27.0"), m);
  BOOST_TEST(contains(m, "loaded cuDNN is 9.14.0"), m);
  BOOST_TEST(contains(m, "/usr/lib/libcudnn.so.9"), m);
}

BOOST_AUTO_TEST_CASE(the_same_or_a_newer_loaded_cudnn_is_accepted) {
  BOOST_TEST(dnngraph::detail::check_loaded_cudnn(91900, 91900, "x").has_value());
  BOOST_TEST(dnngraph::detail::check_loaded_cudnn(91900, 92700, "x").has_value());
}

BOOST_AUTO_TEST_CASE(handle_create_here_fails_for_want_of_a_device_not_for_the_version) {
  // The library here is the one compiled against; without a GPU cudnnCreate fails instead.
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    BOOST_TEST((handle.error().code != dnngraph::ErrorCode::VersionTooOld), handle.error().message);
  }
}
