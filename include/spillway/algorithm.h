// The Algorithm enum and what is known of each algorithm by name, all generated from the one list
// in spillway/algorithm_list.h. Plain constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/algorithm_list.h"
#include "spillway/error.h"

namespace spillway {

enum class Algorithm : std::uint8_t {
#define SPILLWAY_ENUMERATOR(enumerator, name, takes_burst) enumerator,
  SPILLWAY_ALGORITHMS(SPILLWAY_ENUMERATOR)
#undef SPILLWAY_ENUMERATOR
};

// Every algorithm, in list order (kAlgorithms[i] has the number i).
inline constexpr std::array kAlgorithms = {
#define SPILLWAY_ENUMERATOR(enumerator, name, takes_burst) Algorithm::enumerator,
    SPILLWAY_ALGORITHMS(SPILLWAY_ENUMERATOR)
#undef SPILLWAY_ENUMERATOR
};
inline constexpr int kAlgorithmCount = static_cast<int>(kAlgorithms.size());

// The algorithm's number: its position in the list (also the all-or-nothing script's id).
constexpr std::size_t algorithm_index(Algorithm a) { return static_cast<std::size_t>(a); }

// "fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra".
constexpr std::string_view algorithm_name(Algorithm a) {
  constexpr std::array<std::string_view, kAlgorithmCount> kNames = {
#define SPILLWAY_NAME(enumerator, name, takes_burst) #name,
      SPILLWAY_ALGORITHMS(SPILLWAY_NAME)
#undef SPILLWAY_NAME
  };
  return kNames[algorithm_index(a)];
}

// Whether a burst B other than the limit may be given (the bucket types: token_bucket, gcra).
constexpr bool takes_burst(Algorithm a) {
  constexpr std::array<bool, kAlgorithmCount> kTakesBurst = {
#define SPILLWAY_TAKES_BURST(enumerator, name, takes_burst) takes_burst,
      SPILLWAY_ALGORITHMS(SPILLWAY_TAKES_BURST)
#undef SPILLWAY_TAKES_BURST
  };
  return kTakesBurst[algorithm_index(a)];
}

// Whether a limit may admit a request after a wait (Limit::with_max_delay): the bucket types,
// whose state gives the exact time a request would fit. The windows cannot: a window's next
// room depends on which of its past requests leave it, not on one number.
constexpr bool takes_max_delay(Algorithm a) { return takes_burst(a); }

// By name; the error lists the names there are.
Result<Algorithm> parse_algorithm(std::string_view name);

// "burst applies only to token_bucket and gcra, not fixed_window": the one message for a burst
// given to an algorithm that takes none.
std::string burst_not_taken_message(Algorithm a);
// "max_delay applies only to token_bucket and gcra, not sliding_log (...)": the same for a delay.
std::string max_delay_not_taken_message(Algorithm a);

}  // namespace spillway
