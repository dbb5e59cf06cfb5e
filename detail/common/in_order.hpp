// detail::in_order and detail::when: a chain of fallible calls (backend setters, finalize) written
// as one expression. in_order(step, step, ...) calls each step in turn while the ones before it
// succeeded and returns the first failure, or the last step's success; when(condition, step) is
// a step that runs only under its condition (a default result, success, otherwise). Each step is
// a callable taking nothing and returning the same type, one that converts to bool
// (backend::Expected<void>).
#pragma once

#include <utility>

namespace dnngraph::detail {

template <typename First, typename... Rest>
[[nodiscard]] auto in_order(First&& first, Rest&&... rest) {
  auto result = std::forward<First>(first)();
  // && stops at the first failure: the steps after it are not called.
  static_cast<void>(
      (static_cast<bool>(result) && ... && static_cast<bool>(result = std::forward<Rest>(rest)())));
  return result;
}

template <typename Condition, typename Step>
[[nodiscard]] auto when(const Condition& condition, Step&& step) {
  return [run = static_cast<bool>(condition), &step] { return run ? step() : decltype(step()){}; };
}

}  // namespace dnngraph::detail
