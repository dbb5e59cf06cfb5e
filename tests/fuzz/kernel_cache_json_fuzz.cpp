// libFuzzer harness for KernelCache::from_json (issue 16): any bytes may be a cache file read
// from disk. What must hold for every input, or the harness traps:
//  - from_json never crashes, and a refusal leaves the cache unloaded;
//  - a document from_json took builds (against a graph the CPU finalizes: a loaded cache binds
//    its topology from the document) and serializes again;
//  - that serialization, written by cuDNN, is taken by from_json again (to_json never yields a
//    document from_json refuses).
// Half of the mutations are structure-aware: the input is parsed as JSON, one value of it is
// replaced, duplicated, removed or copied elsewhere, and the document is serialized again, so
// inputs stay documents and reach the schema checks and cuDNN; the other half are libFuzzer's
// byte mutations (broken syntax, duplicate member names).
// Built by scripts/fuzz (DNNGRAPH_FUZZ=ON) with -fsanitize=fuzzer,address,undefined.
#include "api/kernel_cache.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "support/cpu_operation_graph.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

// Stops the run with the reason; libFuzzer saves the input as a crash.
[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kernel_cache_json_fuzz: %s: %s\n", what, detail.c_str());
  __builtin_trap();
}

namespace json = boost::json;

// How many inputs from_json saw and how many reached cuDNN and were taken, printed at exit:
// a run where few documents get through has fuzzed the checks, not cuDNN.
struct Counts {
  std::int64_t inputs = 0;
  std::int64_t loaded = 0;
  Counts() = default;
  Counts(const Counts&) = delete;
  Counts& operator=(const Counts&) = delete;
  Counts(Counts&&) = delete;
  Counts& operator=(Counts&&) = delete;
  ~Counts() {
    std::fprintf(stderr, "kernel_cache_json_fuzz: %lld inputs, %lld loaded and built\n",
                 static_cast<long long>(inputs), static_cast<long long>(loaded));
  }
};
Counts counts;

// Every value of the document, depth first, so a mutation can pick one.
void collect(json::value& value, std::vector<json::value*>& all) {
  all.push_back(&value);
  if (auto* object = value.if_object()) {
    for (auto& member : *object) {
      collect(member.value(), all);
    }
  } else if (auto* array = value.if_array()) {
    for (auto& element : *array) {
      collect(element, all);
    }
  }
}

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::array<std::int64_t, 16> edge_integers{
    -1, 0, 1, 2, 3, 4, 7, 8, 9, 32, 65536, int32_max, 1LL << 40, 1LL << 62, int64_max, int64_min};
constexpr std::array<double, 6> edge_doubles{0.0, -1.0, 0.5, 1e-308, 1e308, -1e308};

// A value of the same kind as `target` (another integer, another string of the document),
// so the document mostly stays within the schema and reaches cuDNN.
json::value same_kind(const json::value& target, std::minstd_rand& random,
                      const std::vector<json::value*>& all) {
  if (target.is_int64() || target.is_uint64()) {
    return json::value(edge_integers[random() % edge_integers.size()]);
  }
  if (target.is_double()) {
    return json::value(edge_doubles[random() % edge_doubles.size()]);
  }
  if (target.is_bool()) {
    return json::value(!target.get_bool());
  }
  for (int tries = 0; tries < 8; ++tries) {  // a string: another one of the document
    const json::value& other = *all[random() % all.size()];
    if (other.is_string()) {
      return other;
    }
  }
  return target;
}

// A value of any kind, or a copy of another part of the document.
json::value any_kind(std::minstd_rand& random, const std::vector<json::value*>& all) {
  constexpr std::array<std::string_view, 4> strings{"abc", "-1", "99999999999999999999", ""};
  switch (random() % 6) {
    case 0: return json::value(strings[random() % strings.size()]);
    case 1: return json::value(nullptr);
    case 2: return json::value(json::array{});
    case 3: return json::value(json::object{});
    case 4: return json::value(edge_integers[random() % edge_integers.size()]);
    default: return *all[random() % all.size()];
  }
}

// One structural change to the document in place.
void mutate(json::value& document, std::minstd_rand& random) {
  std::vector<json::value*> all;
  collect(document, all);
  json::value& target = *all[random() % all.size()];
  if (auto* array = target.if_array(); array != nullptr && !array->empty() && random() % 2 == 0) {
    const std::size_t at = random() % array->size();
    if (random() % 2 == 0) {
      array->push_back(json::value((*array)[at]));  // a duplicate element (entries, tensors)
    } else {
      array->erase(array->begin() + static_cast<std::ptrdiff_t>(at));
    }
    return;
  }
  if (auto* object = target.if_object();
      object != nullptr && !object->empty() && random() % 2 == 0) {
    auto member = object->begin() + static_cast<std::ptrdiff_t>(random() % object->size());
    object->erase(member);
    return;
  }
  target = random() % 4 != 0 ? same_kind(target, random, all) : any_kind(random, all);
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  std::minstd_rand random(seed);
  boost::system::error_code ec;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  json::value document =
      json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec);
  if (ec || random() % 2 == 0) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  mutate(document, random);
  const std::string text = json::serialize(document);
  if (text.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::ranges::transform(text, data, [](char c) { return static_cast<std::uint8_t>(c); });
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One graph for the whole run: cuDNN 9.19 finalizes it without a GPU.
  static const auto graph = dnngraph::testing::swish_graph(1.5);
  if (!graph) {
    broken("setup", "cuDNN did not finalize the swish graph on the CPU");
  }
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ++counts.inputs;
  dnngraph::KernelCache cache;
  auto loaded = cache.from_json(text);
  if (!loaded) {
    if (cache.descriptors_created() != 0 || cache.is_built()) {
      broken("a refused document changed the cache", loaded.error().message);
    }
    return 0;
  }
  if (auto built = dnngraph::detail::KernelCacheAccess::build(cache, graph->graph); !built) {
    broken("a loaded cache did not build", built.error().message);
  }
  auto json = cache.to_json();
  if (!json) {
    broken("a built cache did not serialize", json.error().message);
  }
  dnngraph::KernelCache again;
  if (auto reloaded = again.from_json(*json); !reloaded) {
    broken("from_json refused what to_json wrote", reloaded.error().message + "\n" + *json);
  }
  ++counts.loaded;
  return 0;
}
