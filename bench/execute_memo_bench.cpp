// The host-side bookkeeping of execute() with overrides, on the CPU (no cuDNN execute): finding
// the checked override set and the kept variant pack of a call, then putting the pack back.
// Two ways, same data, two sets alternating and one set repeated:
//   before  the override memo's find (lock, compare, rotate, a shared_ptr copy), then the pack
//           memo's take matched on the set's pointer, and put: three lock pairs;
//   after   the pack memo's take matched on the caller's lists (PackEntry::serves, against the
//           entry's flat key), and put: two lock pairs.
// What the GPU run adds (cudnnBackendExecute, the 9.19 cache mutex) is the same for both.
//   bench_execute_memo [--calls N]
#include "bench/timing.hpp"
#include "detail/common/checkout_memo.hpp"
#include "detail/graph/built_graph.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace {

using dnngraph::detail::CheckedOverrides;
using dnngraph::detail::CheckoutMemo;
using dnngraph::detail::OverrideLists;
using dnngraph::detail::OverrideMemo;
using dnngraph::detail::Overrides;
using dnngraph::detail::PackEntry;
using dnngraph_bench::Clock;
using Dims = std::vector<std::int64_t>;

struct Set {
  std::vector<std::int64_t> uids{1, 2, 3};
  std::vector<Dims> shapes, strides;
  explicit Set(std::int64_t n) {
    for (int i = 0; i < 3; ++i) {
      shapes.push_back({1, n, n});
      strides.push_back({n * n, n, 1});
    }
  }
  [[nodiscard]] Overrides spans() const { return {uids, shapes, strides}; }
};

// PackEntry before this change: the pointers apart, the set matched by its pointer.
struct OldPackEntry {
  std::vector<void*> pointers;
  void* workspace = nullptr;
  std::shared_ptr<const CheckedOverrides> overrides;
  dnngraph::backend::VariantPack pack;
};

struct Fixture {
  OverrideMemo memo;
  CheckoutMemo<PackEntry> packs{16};
  CheckoutMemo<OldPackEntry> old_packs{16};
};

// A fixture holding both sets checked and a pack for each, as after two warm-up calls.
std::unique_ptr<Fixture> prepared(std::span<void* const> pointers, void* workspace,
                                  std::span<const Set* const> sets) {
  auto f = std::make_unique<Fixture>();
  for (const Set* set : sets) {
    auto checked = std::make_shared<CheckedOverrides>(OverrideLists(set->spans()),
                                                      dnngraph::detail::OverriddenTensors{});
    f->memo.insert(checked);
    auto pack = dnngraph::backend::VariantPack::create();
    auto old_pack = dnngraph::backend::VariantPack::create();
    if (!pack || !old_pack) {
      std::printf("cuDNN: no variant pack descriptor\n");
      std::exit(1);
    }
    f->old_packs.put(OldPackEntry{.pointers = {pointers.begin(), pointers.end()},
                                  .workspace = workspace,
                                  .overrides = checked,
                                  .pack = std::move(*old_pack)});
    f->packs.put(PackEntry{.key = dnngraph::detail::pack_key(pointers, workspace, set->spans()),
                           .overrides = std::move(checked),
                           .pack = std::move(*pack)});
  }
  return f;
}

// Nanoseconds per call of `call` over `calls` calls, taking the sets in turn.
template <class Call>
double per_call_ns(int calls, std::span<const Set* const> sets, Call&& call) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    if (!call(*sets[static_cast<std::size_t>(i) % sets.size()])) {
      std::printf("a call found no pack\n");
      std::exit(1);
    }
  }
  return dnngraph_bench::ms_since(start) * 1e6 / calls;
}

}  // namespace

int main(int argc, char* argv[]) {
  int calls = 2'000'000;
  std::string_view only;  // "before" or "after": that way alone (for a profiler's counts)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--calls") {
      calls = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--only") {
      only = argv[i + 1];
    }
  }
  std::array<int, 4> data{};
  const std::array<void*, 3> pointers{&data[0], &data[1], &data[2]};
  void* workspace = &data[3];
  const Set s512(512), s256(256);
  const std::array<const Set*, 2> alternating{&s512, &s256};
  const std::array<const Set*, 1> same{&s512};

  const auto before = [&](Fixture& f) {
    return [&](const Set& s) {
      auto checked = f.memo.find(s.spans());
      auto entry = f.old_packs.take([&](const OldPackEntry& e) {
        return e.workspace == workspace && e.overrides == checked &&
               std::ranges::equal(e.pointers, pointers);
      });
      if (!entry) {
        return false;
      }
      f.old_packs.put(std::move(*entry));
      return true;
    };
  };
  const auto after = [&](Fixture& f) {
    return [&](const Set& s) {
      const Overrides spans = s.spans();
      auto entry =
          f.packs.take([&](const PackEntry& e) { return e.serves(pointers, workspace, spans); });
      if (!entry) {
        return false;
      }
      f.packs.put(std::move(*entry));
      return true;
    };
  };
  std::printf(
      "# execute() bookkeeping with overrides, CPU only, ns per call (%d calls), the "
      "fastest of 9 rounds taking turns\n",
      calls);
  for (const auto& [name, sets] :
       {std::pair{"alternating", std::span<const Set* const>(alternating)},
        std::pair{"same", std::span<const Set* const>(same)}}) {
    std::vector<double> b, a;
    for (int round = 0; round < 9; ++round) {
      auto fb = prepared(pointers, workspace, alternating);
      auto fa = prepared(pointers, workspace, alternating);
      if (only != "after") {
        b.push_back(per_call_ns(calls, sets, before(*fb)));
      }
      if (only != "before") {
        a.push_back(per_call_ns(calls, sets, after(*fa)));
      }
    }
    std::printf("%-12s before %7.1f ns  after %7.1f ns\n", name,
                b.empty() ? -1.0 : std::ranges::min(b), a.empty() ? -1.0 : std::ranges::min(a));
  }
  return 0;
}
