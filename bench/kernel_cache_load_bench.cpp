// KernelCache::from_json on the CPU (no GPU needed: cuDNN 9.19 parses and finalizes a kernel
// cache document without one). Times, per document, the whole from_json and its two parts:
// dnngraph's check (detail::check_cache_document: strict read, parse, schema, duplicate keys,
// serialization) and cuDNN's own (descriptor create, JSON attribute, finalize) on the checked
// text. The documents: the stored cuDNN 9.19 documents (tests/fuzz/corpus/kernel_cache_json) or
// the files named on the command line, and a matmul document with 1, 10 and 100 entries, each
// entry carrying a compiled kernel of about the size cuDNN writes for a matmul (a 48 KB document
// for one entry on the H200).
//   bench_kernel_cache_load [--reps N] [FILE...]
#include "api/kernel_cache.hpp"
#include "bench/timing.hpp"
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/cache/kernel_cache_schema.hpp"

#include <boost/json.hpp>

#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using dnngraph_bench::Clock;
using dnngraph_bench::median;
using dnngraph_bench::ms_since;

std::string read(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// cuDNN's part of from_json: a descriptor parses the text and finalizes; the time of the
// finalize alone in *finalize_ms. False when refused.
bool cudnn_load(const std::string& text, double* finalize_ms) {
  cudnnBackendDescriptor_t d = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR, &d) !=
      CUDNN_STATUS_SUCCESS) {
    return false;
  }
  bool ok = cudnnBackendSetAttribute(d, CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION,
                                     CUDNN_TYPE_CHAR, static_cast<int64_t>(text.size()),
                                     text.data()) == CUDNN_STATUS_SUCCESS;
  const auto start = Clock::now();
  ok = ok && cudnnBackendFinalize(d) == CUDNN_STATUS_SUCCESS;
  *finalize_ms = ms_since(start);
  cudnnBackendDestroyDescriptor(d);
  return ok;
}

// A matmul document with `entries` entries: the one-entry document's entry repeated with
// distinct engine ids, each value a kernel whose cubin is `cubin_bytes` of base64.
std::string with_entries(const std::string& one_entry, int entries, std::size_t cubin_bytes) {
  const std::string marker = "\"kernel_cache\":[";
  const std::size_t list = one_entry.find(marker);
  const std::size_t engine = one_entry.find("\"engineId\":", list);
  const std::size_t engine_end = one_entry.find(',', engine);
  const std::size_t cubin = one_entry.find("\"cubin\":\"", list);
  const std::size_t cubin_end = one_entry.find('"', cubin + 9);
  if (list == std::string::npos || engine == std::string::npos || cubin == std::string::npos) {
    return {};
  }
  const std::size_t entry_begin = list + marker.size();
  const std::size_t entry_end = one_entry.rfind("]}");
  std::string kernel(cubin_bytes - cubin_bytes % 4, 'A');
  std::string text = one_entry.substr(0, entry_begin);
  for (int i = 0; i < entries; ++i) {
    text += i == 0 ? "" : ",";
    text += one_entry.substr(entry_begin, engine - entry_begin);
    text += "\"engineId\":" + std::to_string(i);
    text += one_entry.substr(engine_end, cubin + 9 - engine_end);
    text += kernel;
    text += one_entry.substr(cubin_end, entry_end - cubin_end);
  }
  return text + "]}";
}

// The check's stages that can be called from outside: Boost.JSON's parse, the schema walk and
// the serialization; the rest of the check is the strict read and the duplicate-key pass.
void split(const std::string& name, const std::string& text, int reps) {
  std::vector<double> parse, schema, serialize;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(text, ec);
    parse.push_back(ms_since(start));
    start = Clock::now();
    const bool ok = dnngraph::detail::check_cache_schema(doc).has_value();
    schema.push_back(ms_since(start));
    start = Clock::now();
    const std::string again = boost::json::serialize(doc);
    serialize.push_back(ms_since(start));
    if (!ok || again.empty()) {
      return;
    }
  }
  std::printf("%-28s   of the check: parse %8.3f ms  schema %8.3f ms  serialize %8.3f ms\n",
              name.c_str(), median(parse), median(schema), median(serialize));
}

void measure(const std::string& name, const std::string& text, int reps) {
  std::vector<double> whole, check, cudnn, finalize;
  std::string refusal;
  for (int r = 0; r < reps; ++r) {
    dnngraph::KernelCache kc;
    auto start = Clock::now();
    auto loaded = kc.from_json(text);
    whole.push_back(ms_since(start));
    if (!loaded) {
      refusal = loaded.error().message;
      break;
    }
    start = Clock::now();
    auto checked = dnngraph::detail::check_cache_document(text);
    check.push_back(ms_since(start));
    start = Clock::now();
    double finalize_ms = 0;
    cudnn_load(checked->text, &finalize_ms);
    cudnn.push_back(ms_since(start));
    finalize.push_back(finalize_ms);
  }
  if (!refusal.empty()) {
    std::printf("%-28s %8zu B  refused: %s\n", name.c_str(), text.size(), refusal.c_str());
    return;
  }
  std::printf(
      "%-28s %8zu B  from_json %8.3f ms  check %8.3f ms  cuDNN %8.3f ms (of it finalize %.3f)\n",
      name.c_str(), text.size(), median(whole), median(check), median(cudnn), median(finalize));
  std::printf(
      "{\"case\": \"from_json_cpu\", \"document\": \"%s\", \"bytes\": %zu, \"from_json_ms\": %.4f, "
      "\"check_ms\": %.4f, \"cudnn_ms\": %.4f, \"cudnn_finalize_ms\": %.4f}\n",
      name.c_str(), text.size(), median(whole), median(check), median(cudnn), median(finalize));
}

}  // namespace

int main(int argc, char* argv[]) {
  int reps = 21;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      files.emplace_back(arg);
    }
  }
  // The source tree's corpus; on another machine (the GPU bundle) the working tree's, relative.
  std::filesystem::path corpus = DNNGRAPH_KERNEL_CACHE_CORPUS;
  if (!std::filesystem::is_directory(corpus)) {
    corpus = "tests/fuzz/corpus/kernel_cache_json";
  }
  if (files.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
      files.push_back(entry.path());
    }
    std::ranges::sort(files);
  }
  std::printf("# KernelCache::from_json on the CPU, cuDNN %zu, median of %d\n", cudnnGetVersion(),
              reps);
  for (const auto& file : files) {
    measure(file.filename().string(), read(file), reps);
  }
  const std::string one = read(corpus / "matmul_entry_with_kernel.json");
  // A matmul kernel as cuDNN 9.19 serializes it on the H200: a 48 KB document of one entry.
  constexpr std::size_t cubin_bytes = 46000;
  for (const int entries : {1, 10, 100}) {
    const std::string name = "matmul " + std::to_string(entries) + " entries";
    const std::string text = with_entries(one, entries, cubin_bytes);
    const int n = entries == 100 ? std::max(3, reps / 4) : reps;
    measure(name, text, n);
    split(name, text, n);
  }
  return 0;
}
