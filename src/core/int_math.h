// Exact integer helpers for the algorithms. Divisors are always > 0.
#pragma once

#include <cstdint>

namespace spillway::core {

// Rounds toward negative infinity, for any sign of n.
constexpr std::int64_t floor_div(std::int64_t n, std::int64_t d) {
  std::int64_t q = n / d;
  return (n % d != 0 && n < 0) ? q - 1 : q;
}

// Rounds toward positive infinity, for any sign of n.
constexpr std::int64_t ceil_div(std::int64_t n, std::int64_t d) {
  std::int64_t q = n / d;
  return (n % d != 0 && n > 0) ? q + 1 : q;
}

// Rounds toward negative infinity; result is in [0, d).
constexpr std::int64_t floor_mod(std::int64_t n, std::int64_t d) { return n - floor_div(n, d) * d; }

}  // namespace spillway::core
