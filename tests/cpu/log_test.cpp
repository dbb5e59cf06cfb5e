// The log: off costs no text, a callback sink receives each line, levels filter, and a build
// says what it did (here: a build that fails for want of a handle, and a cache loaded from JSON).
// DNNGRAPH_LOG / DNNGRAPH_LOG_FILE are read at load: tests/cmake/cache_cli_test.cmake runs a
// program with them.
#define BOOST_TEST_MODULE log
#include <boost/test/unit_test.hpp>

#include "detail/common/logging.hpp"
#include "support/kernel_cache_documents.hpp"

#include "api/dnngraph.hpp"

#include <mutex>
#include <string>
#include <vector>

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Collects lines through the callback sink for the life of the fixture.
struct Captured {
  std::mutex mutex;
  std::vector<std::pair<dnngraph::LogLevel, std::string>> lines;  // guarded by mutex

  explicit Captured(dnngraph::LogLevel level) {
    dnngraph::set_log_level(level);
    dnngraph::set_log_sink([this](dnngraph::LogLevel l, std::string_view line) {
      std::scoped_lock lock(mutex);
      lines.emplace_back(l, std::string(line));
    });
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  Captured(Captured&&) = delete;
  Captured& operator=(Captured&&) = delete;
  ~Captured() {
    dnngraph::set_log_sink({});
    dnngraph::set_log_level(dnngraph::LogLevel::Off);
  }
  std::string all() {
    std::scoped_lock lock(mutex);
    std::string text;
    for (const auto& [level, line] : lines) {
      text += std::string(dnngraph::to_string(level)) + ": " + line + "\n";
    }
    return text;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(when_off_a_site_makes_no_text_and_calls_no_sink) {
  Captured captured(dnngraph::LogLevel::Off);
  int made = 0;
  dnngraph::detail::log_info([&] {
    ++made;
    return std::string("never");
  });
  BOOST_TEST(made == 0);
  BOOST_TEST(captured.all().empty());
}

BOOST_AUTO_TEST_CASE(info_passes_info_lines_and_filters_debug_ones) {
  Captured captured(dnngraph::LogLevel::Info);
  int made = 0;
  dnngraph::detail::log_info([&] {
    ++made;
    return std::string("an info line");
  });
  dnngraph::detail::log_debug([&] {
    ++made;
    return std::string("a debug line");
  });
  BOOST_TEST(made == 1);
  BOOST_TEST(captured.all() == "info: an info line\n");
  BOOST_TEST((dnngraph::log_level() == dnngraph::LogLevel::Info));
}

BOOST_AUTO_TEST_CASE(a_failed_build_logs_the_graph_summary_and_the_error) {
  Captured captured(dnngraph::LogLevel::Info);
  dnngraph::Graph g;
  g.set_name("logged").set_io_data_type(dnngraph::DataType::Half);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_dim({1, 8, 4}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_dim({1, 4, 2}));
  auto c = g.matmul(a, b, dnngraph::MatmulAttributes().set_name("mm"));
  c->set_output(true);
  const dnngraph::Handle empty;
  auto built = g.build(empty, {dnngraph::HeuristicMode::A});
  BOOST_TEST(!built.has_value());
  const std::string text = captured.all();
  BOOST_TEST(contains(text, "info: build 'logged': 1 node(s) (matmul 'mm')"), text);
  BOOST_TEST(contains(text, "heuristics A: failed, InvalidHandle"), text);
  BOOST_TEST(contains(text, " ms"), text);
}

BOOST_AUTO_TEST_CASE(a_cache_loaded_from_json_is_logged,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  Captured captured(dnngraph::LogLevel::Info);
  dnngraph::KernelCache cache;
  BOOST_TEST_REQUIRE(cache.from_json(dnngraph::testing::matmul).has_value());
  const std::string text = captured.all();
  BOOST_TEST(contains(text, "kernel cache: loaded a document of"), text);
  BOOST_TEST(contains(text, "0 entries"), text);
}

BOOST_AUTO_TEST_CASE(the_sink_can_be_replaced_and_removed_while_logging_continues) {
  Captured captured(dnngraph::LogLevel::Debug);
  dnngraph::detail::log_debug([] { return std::string("one"); });
  int other = 0;
  dnngraph::set_log_sink([&](dnngraph::LogLevel, std::string_view) { ++other; });
  dnngraph::detail::log_debug([] { return std::string("two"); });
  BOOST_TEST(captured.all() == "debug: one\n");
  BOOST_TEST(other == 1);
}
