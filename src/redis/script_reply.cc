#include "src/redis/script_reply.h"

namespace spillway::redis {

Result<Decision> decision_at(const Reply& reply, std::size_t i) {
  if (reply.is_error()) {
    return std::unexpected(Error{Errc::kUnavailable, "redis replied: " + reply.text});
  }
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
                  .reset_after = e[first + 4].integer};
}

}  // namespace spillway::redis
