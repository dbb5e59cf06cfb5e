// detail::CheckoutMemo (internal to api/): a small, bounded, most-recent-first store of entries
// that one thread at a time may use. take() removes the most recent entry a predicate accepts,
// put() returns it (or a new one) as the most recent; past the capacity the least recent falls
// off. An entry in use is in no memo, so two threads never share one: execute() keeps its cuDNN
// variant packs here, and whether cuDNN allows one pack in two concurrent executes never matters.
// One mutex guards the list; nothing is allocated once it has grown to its capacity, and what
// falls off is destroyed after the lock is released.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace dnngraph::detail {

template <class Entry>
class CheckoutMemo {
 public:
  explicit CheckoutMemo(std::size_t capacity) : capacity_(capacity) { entries_.reserve(capacity_); }

  // The most recent entry `matches` accepts, removed from the memo; nullopt if none does.
  // `matches` runs under the lock: keep it a comparison.
  template <class Match>
  [[nodiscard]] std::optional<Entry> take(Match&& matches) {
    std::scoped_lock lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (matches(std::as_const(*it))) {
        std::optional<Entry> found(std::move(*it));
        entries_.erase(it);
        return found;
      }
    }
    return std::nullopt;
  }

  // Stores `entry` as the most recent; the least recent one falls off when the memo is full.
  void put(Entry entry) {
    std::optional<Entry> dropped;  // destroyed after the lock below is released
    std::scoped_lock lock(mutex_);
    if (capacity_ == 0) {
      dropped.emplace(std::move(entry));
      return;
    }
    if (entries_.size() == capacity_) {
      dropped.emplace(std::move(entries_.back()));
      entries_.pop_back();
    }
    entries_.insert(entries_.begin(), std::move(entry));
  }

  [[nodiscard]] std::size_t size() const {
    std::scoped_lock lock(mutex_);
    return entries_.size();
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // guarded by mutex_; most recent first, at most capacity_
};

}  // namespace dnngraph::detail
