// Helpers shared by the core tests: state equality, printing, per-state-type traits and a
// Limit factory that fails loudly. Written from the public contract only (docs/SPEC.md §2,
// headers).
#pragma once

#include <gtest/gtest.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/all_algorithms.h"

namespace spillway {

// gtest picks this up through ADL to print Decisions in failure messages.
inline void PrintTo(const Decision& d, std::ostream* os) {
  *os << "{allowed=" << (d.allowed ? "true" : "false") << ", limit=" << d.limit
      << ", remaining=" << d.remaining << ", retry_after=" << d.retry_after
      << ", reset_after=" << d.reset_after << ", delay=" << d.delay << "}";
}

}  // namespace spillway

namespace spillway::test_util {

inline std::string show(const Decision& d) {
  std::ostringstream os;
  PrintTo(d, &os);
  return os.str();
}

// Builds a Limit or throws with the error message (a test failure either way).
inline Limit make_limit(Algorithm a, std::int64_t limit, Micros period,
                        std::optional<std::int64_t> burst = std::nullopt) {
  auto made = Limit::make(a, limit, period, burst);
  if (!made) {
    throw std::runtime_error("Limit::make failed: " + made.error().message);
  }
  return *made;
}

// Field-by-field equality of the algorithm states ("a denied request changes no state").
inline bool same_state(const core::FixedWindowState& a, const core::FixedWindowState& b) {
  return a.window == b.window && a.count == b.count;
}
inline bool same_state(const core::SlidingLogState& a, const core::SlidingLogState& b) {
  if (a.total != b.total || a.entries.size() != b.entries.size()) return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    if (a.entries[i].at != b.entries[i].at || a.entries[i].cost != b.entries[i].cost) return false;
  }
  return true;
}
inline bool same_state(const core::SlidingWindowState& a, const core::SlidingWindowState& b) {
  return a.last == b.last && a.previous == b.previous && a.current == b.current;
}
inline bool same_state(const core::TokenBucketState& a, const core::TokenBucketState& b) {
  return a.units == b.units && a.last == b.last && a.since == b.since && a.low == b.low;
}
inline bool same_state(const core::GcraState& a, const core::GcraState& b) {
  return a.tat_us == b.tat_us && a.tat_rem == b.tat_rem && a.last == b.last && a.since == b.since &&
         a.low == b.low;
}

inline std::string show_state(const core::FixedWindowState& s) {
  return "FixedWindowState{window=" + std::to_string(s.window) +
         ", count=" + std::to_string(s.count) + "}";
}
inline std::string show_state(const core::SlidingLogState& s) {
  std::string out = "SlidingLogState{total=" + std::to_string(s.total) + ", entries=[";
  for (const auto& e : s.entries) {
    out += "(" + std::to_string(e.at) + "," + std::to_string(e.cost) + ")";
  }
  return out + "]}";
}
inline std::string show_state(const core::SlidingWindowState& s) {
  return "SlidingWindowState{last=" + std::to_string(s.last) +
         ", previous=" + std::to_string(s.previous) + ", current=" + std::to_string(s.current) +
         "}";
}
inline std::string show_state(const core::TokenBucketState& s) {
  return "TokenBucketState{units=" + std::to_string(s.units) + ", last=" + std::to_string(s.last) +
         ", since=" + std::to_string(s.since) + ", low=" + std::to_string(s.low) + "}";
}
inline std::string show_state(const core::GcraState& s) {
  return "GcraState{tat_us=" + std::to_string(s.tat_us) + ", tat_rem=" + std::to_string(s.tat_rem) +
         ", last=" + std::to_string(s.last) + ", since=" + std::to_string(s.since) +
         ", low=" + std::to_string(s.low) + "}";
}

// The algorithm whose state type is State (the inverse of core::StateOf).
template <typename State, std::size_t... I>
consteval Algorithm algorithm_of(std::index_sequence<I...>) {
  Algorithm found = kAlgorithms[0];
  ((std::is_same_v<core::StateOf<kAlgorithms[I]>, State> ? (found = kAlgorithms[I], true)
                                                         : false) ||
   ...);
  return found;
}

// Which algorithm a state type belongs to, and whether it is one of the bucket types (which take
// a burst B and use B, not L, as the largest cost that can ever pass). From the algorithm list.
template <typename State>
struct AlgoTraits {
  static constexpr Algorithm kAlgorithm =
      algorithm_of<State>(std::make_index_sequence<kAlgorithmCount>{});
  static_assert(std::is_same_v<core::StateOf<kAlgorithm>, State>, "not an algorithm's state");
  static constexpr bool kBucket = takes_burst(kAlgorithm);
  static constexpr std::string_view kName = algorithm_name(kAlgorithm);
};

// Every algorithm's state type, in list order: typed tests over it run every algorithm.
template <typename Indices>
struct StateTypesOf;
template <std::size_t... I>
struct StateTypesOf<std::index_sequence<I...>> {
  using type = ::testing::Types<core::StateOf<kAlgorithms[I]>...>;
};
using AllStateTypes = StateTypesOf<std::make_index_sequence<kAlgorithmCount>>::type;

// Names typed tests by algorithm ("Properties/gcra.RetryAfterIsExact").
struct AlgorithmNames {
  template <typename State>
  static std::string GetName(int) {
    return std::string(AlgoTraits<State>::kName);
  }
};

// For an algorithm added without an overload above: its State's own == and a plain label.
template <typename State>
requires std::equality_comparable<State>
bool same_state(const State& a, const State& b) { return a == b; }
template <typename State>
std::string show_state(const State&) {
  return std::string(AlgoTraits<State>::kName) + " state";
}

// A Limit for `State`'s algorithm; the burst is passed only to the bucket types.
template <typename State>
Limit limit_for(std::int64_t limit, Micros period,
                std::optional<std::int64_t> burst = std::nullopt) {
  if constexpr (AlgoTraits<State>::kBucket) {
    return make_limit(AlgoTraits<State>::kAlgorithm, limit, period, burst);
  } else {
    return make_limit(AlgoTraits<State>::kAlgorithm, limit, period);
  }
}

// The largest cost that can ever be admitted: B for the bucket types, L otherwise.
template <typename State>
std::int64_t max_cost(const Limit& limit) {
  return AlgoTraits<State>::kBucket ? limit.burst() : limit.limit();
}

}  // namespace spillway::test_util
