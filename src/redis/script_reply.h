// Reading the replies of spillway's scripts. Pure functions; thread-safe.
//   single-algorithm scripts (lua/batch.lua): one string, five little-endian doubles per decision
//     (allowed 0/1, remaining, retry_after µs, reset_after µs, delay µs); exact, every value is an
//     integer below 2^53;
//   the all-or-nothing script: six integers per decision (allowed 0/1, limit, remaining,
//     retry_after µs, reset_after µs, delay µs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "src/redis/reply.h"

namespace spillway::redis {

inline constexpr std::size_t kFieldsPerDecision = 6;
inline constexpr std::size_t kPackedBytesPerDecision = 5 * 8;

// What starts the message of a reply_error (a Redis error reply, as opposed to the client's own
// words for a call that got none).
inline constexpr std::string_view kRedisReplied = "redis replied: ";
// What an error reply from a script call is to the caller: Errc::kUnavailable naming it.
Error reply_error(const Reply& reply);

// Decision i of an all-or-nothing reply. An error reply is Errc::kUnavailable naming it; a reply
// of another shape is Errc::kInternal.
Result<Decision> decision_at(const Reply& reply, std::size_t i);

// Decision i of a single-algorithm script's reply, whose limit was `limit`. Errors as above.
Result<Decision> packed_decision_at(const Reply& reply, std::size_t i, std::int64_t limit);

}  // namespace spillway::redis
