// trace_id_of (see trace_context.h).
#include "src/server/trace_context.h"

#include "src/core/text.h"

namespace spillway::server {
namespace {

bool lower_hex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool all_zero(std::string_view text) { return text.find_first_not_of('0') == std::string::npos; }

}  // namespace

std::optional<std::string> trace_id_of(std::string_view value) {
  // Optional whitespace around a header value is not part of it (RFC 9110 §5.5).
  value = trim(value);
  constexpr std::size_t kLength = 2 + 1 + 32 + 1 + 16 + 1 + 2;  // 55
  if (value.size() < kLength) return std::nullopt;
  const std::string_view version = value.substr(0, 2);
  const std::string_view trace = value.substr(3, 32);
  const std::string_view parent = value.substr(36, 16);
  const std::string_view flags = value.substr(53, 2);
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  if (!lower_hex(version) || !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags)) {
    return std::nullopt;
  }
  if (version == "ff" || all_zero(trace) || all_zero(parent)) return std::nullopt;
  // Version 00 has exactly these fields; a later one may add more, after a dash.
  if (value.size() > kLength && (version == "00" || value[kLength] != '-')) return std::nullopt;
  return std::string(trace);
}

}  // namespace spillway::server
