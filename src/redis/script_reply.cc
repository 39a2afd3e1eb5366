#include "src/redis/script_reply.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace spillway::redis {
namespace {

// The little-endian double at `p` as an integer; false unless it is a whole number that fits.
bool read_integer(const char* p, std::int64_t& out) {
  std::uint64_t bits;
  std::memcpy(&bits, p, sizeof bits);
  if constexpr (std::endian::native == std::endian::big) bits = std::byteswap(bits);
  const double value = std::bit_cast<double>(bits);
  constexpr double kLimit = 9007199254740992.0;  // 2^53: beyond it doubles skip integers
  if (!(value > -kLimit && value < kLimit) || std::trunc(value) != value) return false;
  out = static_cast<std::int64_t>(value);
  return true;
}

}  // namespace

Error reply_error(const Reply& reply) {
  return Error{Errc::kUnavailable, std::string(kRedisReplied) + reply.text};
}

Result<Decision> decision_at(const Reply& reply, std::size_t i) {
  if (reply.is_error()) return std::unexpected(reply_error(reply));
  const std::size_t first = i * kFieldsPerDecision;
  if (reply.type != Reply::Type::kArray || reply.elements.size() < first + kFieldsPerDecision) {
    return std::unexpected(
        Error{Errc::kInternal, "unexpected reply shape from the limiter script"});
  }
  const auto& e = reply.elements;
  for (std::size_t k = first; k < first + kFieldsPerDecision; ++k) {
    if (e[k].type != Reply::Type::kInteger) {
      return std::unexpected(Error{Errc::kInternal, "non-integer field in the limiter's reply"});
    }
  }
  return Decision{.allowed = e[first].integer == 1,
                  .limit = e[first + 1].integer,
                  .remaining = e[first + 2].integer,
                  .retry_after = e[first + 3].integer,
                  .reset_after = e[first + 4].integer,
                  .delay = e[first + 5].integer};
}

Result<Decision> packed_decision_at(const Reply& reply, std::size_t i, std::int64_t limit) {
  if (reply.is_error()) return std::unexpected(reply_error(reply));
  const std::size_t first = i * kPackedBytesPerDecision;
  if (reply.type != Reply::Type::kString || reply.text.size() % kPackedBytesPerDecision != 0 ||
      reply.text.size() < first + kPackedBytesPerDecision) {
    return std::unexpected(
        Error{Errc::kInternal, "unexpected reply shape from the limiter script"});
  }
  std::int64_t fields[5];
  for (std::size_t k = 0; k < 5; ++k) {
    if (!read_integer(reply.text.data() + first + 8 * k, fields[k])) {
      return std::unexpected(Error{Errc::kInternal, "non-integer field in the limiter's reply"});
    }
  }
  return Decision{.allowed = fields[0] == 1,
                  .limit = limit,
                  .remaining = fields[1],
                  .retry_after = fields[2],
                  .reset_after = fields[3],
                  .delay = fields[4]};
}

}  // namespace spillway::redis
