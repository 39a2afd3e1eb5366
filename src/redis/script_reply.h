// Reading the replies of spillway's scripts: five integers per decision (allowed 0/1, limit,
// remaining, retry_after µs, reset_after µs). Pure functions; thread-safe.
#pragma once

#include <cstddef>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "src/redis/reply.h"

namespace spillway::redis {

inline constexpr std::size_t kFieldsPerDecision = 5;

// Decision i of a script reply. An error reply is Errc::kUnavailable naming it; a reply of
// another shape is Errc::kInternal.
Result<Decision> decision_at(const Reply& reply, std::size_t i);

}  // namespace spillway::redis
