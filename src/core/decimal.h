// Appending an integer's decimal digits to a string without a temporary (std::to_chars).
// Pure; thread-safe.
#pragma once

#include <charconv>
#include <concepts>
#include <string>

namespace spillway {

template <std::integral Number>
void append_decimal(std::string& out, Number value) {
  char digits[24];  // 20 digits and a sign at most
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

}  // namespace spillway
