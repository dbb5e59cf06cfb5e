// The execute hot path's parts that run without a GPU: the bounded memo execute() keeps its
// variant packs in (one user per entry, most recent first, bounded, nothing destroyed under its
// lock), the match of a pack to a call (pointers, workspace and the caller's override spans,
// with no override memo in between), and the backend's attribute calls, which make no string
// unless they fail.
#define BOOST_TEST_MODULE execute_memo
#include <boost/test/unit_test.hpp>

#include "backend/library.hpp"
#include "backend/variant_pack.hpp"
#include "detail/common/checkout_memo.hpp"
#include "detail/graph/built_graph.hpp"

#include <cudnn.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

// A sanitizer's runtime defines operator new itself: there the allocation count is off and the
// case that needs it is skipped with that reason.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DNNGRAPH_SANITIZER_OWNS_NEW 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DNNGRAPH_SANITIZER_OWNS_NEW 1
#endif

namespace {

// Every operator new in the process counts here (cuDNN's own included).
std::atomic<std::int64_t> allocations{0};

using dnngraph::detail::CheckoutMemo;

struct Entry {
  int key = 0;
  std::string payload;
};

}  // namespace

#ifndef DNNGRAPH_SANITIZER_OWNS_NEW
// The global allocator replaced to count; malloc and free are what it is made of.
// NOLINTBEGIN(cppcoreguidelines-owning-memory,cppcoreguidelines-no-malloc)
void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
// g++ 12 and 13 inline these into Boost.Test's `delete` of a `new` object and see free() take a
// pointer from operator new (-Wmismatched-new-delete): a false positive, since the operator new
// above is malloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
// NOLINTEND(cppcoreguidelines-owning-memory,cppcoreguidelines-no-malloc)
#endif

// The entry take() gave; a test that got none fails here.
Entry taken(std::optional<Entry> e) {
  BOOST_TEST_REQUIRE(e.has_value());
  return e ? std::move(*e) : Entry{.key = -1, .payload = ""};
}

BOOST_AUTO_TEST_CASE(an_empty_memo_gives_nothing) {
  CheckoutMemo<Entry> memo(4);
  BOOST_TEST(!memo.take([](const Entry&) { return true; }).has_value());
}

BOOST_AUTO_TEST_CASE(a_taken_entry_is_out_of_the_memo_until_put_back) {
  CheckoutMemo<Entry> memo(4);
  memo.put({.key = 1, .payload = "one"});
  Entry first = taken(memo.take([](const Entry& e) { return e.key == 1; }));
  BOOST_TEST(first.payload == "one");
  // A second user of the same key (another thread) does not get the same entry.
  BOOST_TEST(!memo.take([](const Entry& e) { return e.key == 1; }).has_value());
  memo.put(std::move(first));
  BOOST_TEST(memo.take([](const Entry& e) { return e.key == 1; }).has_value());
}

BOOST_AUTO_TEST_CASE(take_finds_the_most_recent_matching_entry) {
  CheckoutMemo<Entry> memo(4);
  memo.put({.key = 1, .payload = "older"});
  memo.put({.key = 2, .payload = "other"});
  memo.put({.key = 1, .payload = "newer"});
  const Entry found = taken(memo.take([](const Entry& e) { return e.key == 1; }));
  BOOST_TEST(found.payload == "newer");
  BOOST_TEST(memo.size() == 2U);
}

BOOST_AUTO_TEST_CASE(past_its_capacity_the_least_recent_entry_falls_off) {
  CheckoutMemo<Entry> memo(2);
  memo.put({.key = 1, .payload = ""});
  memo.put({.key = 2, .payload = ""});
  // Used again: the most recent.
  memo.put(taken(memo.take([](const Entry& e) { return e.key == 2; })));
  memo.put({.key = 3, .payload = ""});
  BOOST_TEST(memo.size() == 2U);
  BOOST_TEST(!memo.take([](const Entry& e) { return e.key == 1; }).has_value());
  BOOST_TEST(memo.take([](const Entry& e) { return e.key == 2; }).has_value());
  BOOST_TEST(memo.take([](const Entry& e) { return e.key == 3; }).has_value());
}

BOOST_AUTO_TEST_CASE(a_memo_of_capacity_zero_keeps_nothing) {
  CheckoutMemo<Entry> memo(0);
  memo.put({.key = 1, .payload = ""});
  BOOST_TEST(memo.size() == 0U);
}

namespace {

// An entry whose destructor asks the memo something: destroyed under the memo's lock, it would
// deadlock (std::mutex is not recursive).
struct Reentrant {
  CheckoutMemo<Reentrant>* memo = nullptr;
  std::size_t* seen = nullptr;
  Reentrant() = default;
  Reentrant(CheckoutMemo<Reentrant>* m, std::size_t* s) : memo(m), seen(s) {}
  Reentrant(Reentrant&& o) noexcept : memo(std::exchange(o.memo, nullptr)), seen(o.seen) {}
  Reentrant& operator=(Reentrant&& o) noexcept {
    memo = std::exchange(o.memo, nullptr);
    seen = o.seen;
    return *this;
  }
  Reentrant(const Reentrant&) = delete;
  Reentrant& operator=(const Reentrant&) = delete;
  ~Reentrant() {
    if (memo != nullptr) {
      *seen = memo->size();
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_entry_that_falls_off_is_destroyed_after_the_lock_is_released) {
  CheckoutMemo<Reentrant> memo(1);
  std::size_t seen = 99;
  memo.put(Reentrant(&memo, &seen));
  memo.put(Reentrant{});  // the first falls off; its destructor calls size()
  BOOST_TEST(seen == 1U);
}

namespace {

// Create, set uids / pointers / workspace, finalize, destroy: through the raw C API, or through
// backend::VariantPack; returns the operator new calls made.
std::int64_t raw_pack_allocations(std::span<const std::int64_t> uids, std::span<void* const> ptrs) {
  const std::int64_t before = allocations.load();
  cudnnBackendDescriptor_t d = nullptr;
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendCreateDescriptor(
                    CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &d) == CUDNN_STATUS_SUCCESS);
  void* workspace = nullptr;
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendSetAttribute(
                    d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                    static_cast<std::int64_t>(uids.size()), uids.data()) == CUDNN_STATUS_SUCCESS);
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendSetAttribute(
                    d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                    static_cast<std::int64_t>(ptrs.size()),
                    static_cast<const void*>(ptrs.data())) == CUDNN_STATUS_SUCCESS);
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendSetAttribute(
                    d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                    static_cast<void*>(&workspace)) == CUDNN_STATUS_SUCCESS);
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendFinalize(d) == CUDNN_STATUS_SUCCESS);
  BOOST_REQUIRE(dnngraph::backend::lib::cudnnBackendDestroyDescriptor(d) == CUDNN_STATUS_SUCCESS);
  return allocations.load() - before;
}

std::int64_t wrapped_pack_allocations(std::span<const std::int64_t> uids,
                                      std::span<void* const> ptrs) {
  const std::int64_t before = allocations.load();
  {
    auto pack = dnngraph::backend::VariantPack::create();
    BOOST_REQUIRE(pack.has_value());
    BOOST_REQUIRE(pack->set_unique_ids(uids).has_value());
    BOOST_REQUIRE(pack->set_data_pointers(ptrs).has_value());
    BOOST_REQUIRE(pack->set_workspace(nullptr).has_value());
    BOOST_REQUIRE(pack->finalize().has_value());
  }
  return allocations.load() - before;
}

boost::unit_test::precondition allocations_are_counted() {
  return boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
#ifdef DNNGRAPH_SANITIZER_OWNS_NEW
    boost::test_tools::assertion_result skip(false);
    skip.message() << "this build's sanitizer runtime owns operator new, so allocations are not "
                      "counted";
    return skip;
#else
    return boost::test_tools::assertion_result(true);
#endif
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_variant_pack_through_the_backend_allocates_no_more_than_cudnn_does,
                     *allocations_are_counted()) {
  // Before, each attribute set and the create and finalize built their error context up front:
  // about ten strings per execute.
  const std::array<std::int64_t, 3> uids{1, 2, 3};
  std::array<int, 3> data{};
  const std::array<void*, 3> ptrs{&data[0], &data[1], &data[2]};
  (void)raw_pack_allocations(uids, ptrs);  // cuDNN's one-time setup out of the count
  const std::int64_t raw = raw_pack_allocations(uids, ptrs);
  const std::int64_t wrapped = wrapped_pack_allocations(uids, ptrs);
  BOOST_TEST(wrapped == raw,
             "backend::VariantPack made " << wrapped << " allocations, cuDNN " << raw);
}

namespace {

using dnngraph::detail::CheckedOverrides;
using dnngraph::detail::OverrideLists;
using dnngraph::detail::Overrides;
using dnngraph::detail::PackEntry;
using Dims = std::vector<std::int64_t>;

// One override set as a caller holds it (vectors of its own).
struct Set {
  std::vector<std::int64_t> uids;
  std::vector<Dims> shapes;
  std::vector<Dims> strides;
  [[nodiscard]] Overrides spans() const { return {uids, shapes, strides}; }
};

Set square(std::int64_t n) {
  return {
      {1, 2, 3}, {{1, n, n}, {1, n, n}, {1, n, n}}, {{n * n, n, 1}, {n * n, n, 1}, {n * n, n, 1}}};
}

// A pack entry as execute() makes one: the set checked (layout left empty here) and a pack.
PackEntry entry_for(std::span<void* const> pointers, void* workspace, const Set* set) {
  auto pack = dnngraph::backend::VariantPack::create();
  BOOST_REQUIRE(pack.has_value());
  std::shared_ptr<const CheckedOverrides> checked;
  if (set != nullptr) {
    checked = std::make_shared<CheckedOverrides>(OverrideLists(set->spans()),
                                                 dnngraph::detail::OverriddenTensors{});
  }
  return PackEntry{.key = dnngraph::detail::pack_key(pointers, workspace,
                                                     set != nullptr ? set->spans() : Overrides{}),
                   .overrides = std::move(checked),
                   .pack = std::move(*pack)};
}

// Whether the entry serves a call with these pointers, workspace and lists, as execute() asks.
bool serves(const PackEntry& e, std::span<void* const> pointers, void* workspace,
            const Overrides& overrides) {
  return e.serves(pointers, workspace, overrides);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_pack_serves_only_the_call_it_was_made_for) {
  std::array<int, 4> data{};
  const std::array<void*, 3> ptrs{&data[0], &data[1], &data[2]};
  const std::array<void*, 3> other_ptrs{&data[0], &data[1], &data[3]};
  void* ws = &data[3];
  const Set a = square(512);
  const Set a_again = square(512);  // equal lists in other storage
  Set other_shape = square(512);
  other_shape.shapes[2][1] = 256;
  Set other_stride = square(512);
  other_stride.strides[0][0] = std::int64_t{512} * 512 * 2;
  Set other_uid = square(512);
  other_uid.uids[2] = 4;
  constexpr std::int64_t plane = std::int64_t{512} * 512;
  const Set shorter{{1, 2}, {{1, 512, 512}, {1, 512, 512}}, {{plane, 512, 1}, {plane, 512, 1}}};

  const PackEntry with_a = entry_for(ptrs, ws, &a);
  BOOST_TEST(serves(with_a, ptrs, ws, a.spans()));
  BOOST_TEST(serves(with_a, ptrs, ws, a_again.spans()));
  BOOST_TEST(!serves(with_a, ptrs, ws, Overrides{}));  // no overrides: another pack
  BOOST_TEST(!serves(with_a, ptrs, ws, other_shape.spans()));
  BOOST_TEST(!serves(with_a, ptrs, ws, other_stride.spans()));
  BOOST_TEST(!serves(with_a, ptrs, ws, other_uid.spans()));
  BOOST_TEST(!serves(with_a, ptrs, ws, shorter.spans()));
  BOOST_TEST(!serves(with_a, other_ptrs, ws, a.spans()));
  BOOST_TEST(!serves(with_a, ptrs, nullptr, a.spans()));
  // Lengths count, not only values: one pointer more, one list element moved to the next list.
  const std::array<void*, 4> more_ptrs{&data[0], &data[1], &data[2], &data[3]};
  BOOST_TEST(!serves(with_a, more_ptrs, ws, a.spans()));
  BOOST_TEST(!serves(with_a, std::span<void* const>(ptrs).first(2), ws, a.spans()));
  Set rank_moved = square(512);
  rank_moved.shapes[0].push_back(rank_moved.shapes[1].front());
  rank_moved.shapes[1].erase(rank_moved.shapes[1].begin());
  BOOST_TEST(!serves(with_a, ptrs, ws, rank_moved.spans()));
  Set strides_short = square(512);
  strides_short.strides.pop_back();
  BOOST_TEST(!serves(with_a, ptrs, ws, strides_short.spans()));

  const PackEntry plain = entry_for(ptrs, ws, nullptr);
  BOOST_TEST(serves(plain, ptrs, ws, Overrides{}));
  BOOST_TEST(!serves(plain, ptrs, ws, a.spans()));
  BOOST_TEST(!serves(plain, other_ptrs, ws, Overrides{}));
}

// Shapes or strides given without uids are overrides (execute() refuses their lengths), never the
// call without overrides: the lists once counted as given only with uids, and such a call ran
// the build shapes (session 29).
BOOST_AUTO_TEST_CASE(lists_without_uids_are_overrides_not_a_plain_call) {
  const std::vector<std::vector<std::int64_t>> lists{{1, 512, 512}};
  BOOST_TEST(Overrides{}.empty());
  BOOST_TEST(!(Overrides{{}, lists, {}}.empty()));
  BOOST_TEST(!(Overrides{{}, {}, lists}.empty()));
  BOOST_TEST(!(Overrides{{}, lists, lists}.empty()));
  std::array<int, 4> data{};
  const std::array<void*, 3> ptrs{&data[0], &data[1], &data[2]};
  void* ws = &data[3];
  const PackEntry plain = entry_for(ptrs, ws, nullptr);
  BOOST_TEST(!serves(plain, ptrs, ws, Overrides{{}, lists, {}}));
  BOOST_TEST(!serves(plain, ptrs, ws, Overrides{{}, {}, lists}));
}

BOOST_AUTO_TEST_CASE(a_long_key_is_compared_whole) {
  // 40 overridden tensors of rank 3: a key of 366 values, compared to its last value.
  std::array<int, 1> data{};
  const std::array<void*, 1> ptrs{&data[0]};
  Set many;
  for (std::int64_t i = 0; i < 40; ++i) {
    many.uids.push_back(i + 1);
    many.shapes.push_back({1, i + 2, 3});
    many.strides.push_back({3 * (i + 2), 3, 1});
  }
  const PackEntry entry = entry_for(ptrs, nullptr, &many);
  BOOST_TEST(entry.key.size() == 366U);
  BOOST_TEST(serves(entry, ptrs, nullptr, many.spans()));
  Set last_differs = many;
  last_differs.strides.back().back() = 2;
  BOOST_TEST(!serves(entry, ptrs, nullptr, last_differs.spans()));
}

BOOST_AUTO_TEST_CASE(two_override_sets_alternating_each_find_their_own_pack) {
  std::array<int, 3> data{};
  const std::array<void*, 3> ptrs{&data[0], &data[1], &data[2]};
  const Set a = square(512), b = square(256);
  CheckoutMemo<PackEntry> memo(16);
  memo.put(entry_for(ptrs, nullptr, &a));
  memo.put(entry_for(ptrs, nullptr, &b));
  const auto match = [&](const Set& s) {
    return
        [&ptrs, spans = s.spans()](const PackEntry& e) { return serves(e, ptrs, nullptr, spans); };
  };
  for (int turn = 0; turn < 6; ++turn) {
    const Set& s = turn % 2 == 0 ? a : b;
    auto found = memo.take(match(s));
    BOOST_REQUIRE(found.has_value());
    // The pack holds the set it was made with; cuDNN reads those lists, equal to the caller's.
    BOOST_TEST((found->overrides->lists.uids == s.uids));
    BOOST_TEST((found->overrides->lists.shapes == s.shapes));
    // While one thread has it, another thread with the same set finds no pack (it makes its own).
    BOOST_TEST(!memo.take(match(s)).has_value());
    memo.put(std::move(*found));
    BOOST_TEST(memo.size() == 2U);
  }
}
