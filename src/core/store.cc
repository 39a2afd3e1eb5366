// StoreRequest's validation and the Store forms built on decide(): the single-key and
// all-or-nothing checks, synchronous and asynchronous.
#include "spillway/store.h"

#include <string>

#include "src/core/inline_completion.h"
#include "src/core/wait_for_answer.h"

namespace spillway {

Result<void> validate_check(std::string_view key, std::int64_t cost, std::optional<Micros> now) {
  if (key.empty()) return invalid_argument("key must not be empty");
  if (key.size() > kMaxKeyBytes) {
    return invalid_argument("key is " + std::to_string(key.size()) + " bytes; at most " +
                            std::to_string(kMaxKeyBytes) + " are allowed");
  }
  if (cost < 0) return invalid_argument("cost must be 0 or more, got " + std::to_string(cost));
  if (now && (*now < 0 || *now > kMaxNow)) {
    return invalid_argument("now must be between 0 and 2^52 µs, got " + std::to_string(*now));
  }
  return {};
}

std::optional<Error> StoreRequest::problem(std::span<const KeyedLimit> checks, std::int64_t cost,
                                           std::optional<Micros> now) {
  if (checks.empty()) return invalid_argument("check_all needs at least one key").error();
  const bool plain_numbers = cost >= 0 && (!now || (*now >= 0 && *now <= kMaxNow));
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const std::size_t bytes = checks[i].key.size();
    if (!plain_numbers || bytes == 0 || bytes > kMaxKeyBytes) {  // the error says which
      if (Result<void> valid = validate_check(checks[i].key, cost, now); !valid) {
        return valid.error();
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (checks[j].key == checks[i].key && *checks[j].limit == *checks[i].limit) {
        return invalid_argument("check_all got the same key twice: \"" +
                                std::string(checks[i].key) + "\"")
            .error();
      }
    }
  }
  return std::nullopt;
}

Result<StoreRequest> StoreRequest::make(std::span<const KeyedLimit> checks, std::int64_t cost,
                                        std::optional<Micros> now, Operation operation) {
  if (std::optional<Error> wrong = problem(checks, cost, now)) return std::unexpected(*wrong);
  return StoreRequest(checks, cost, now, operation);
}

bool all_allowed(const Decisions& decisions) {
  for (const Decision& d : decisions) {
    if (!d.allowed) return false;
  }
  return true;
}

Result<Decisions> Store::decide_and_wait(const StoreRequest& request) {
  auto start = [&](auto answer) { decide(request, std::move(answer)); };
  if (decides_inline()) {
    return take_inline_answer<Result<Decisions>>(
        start, std::unexpected(Error{Errc::kInternal, "the store did not answer inline"}));
  }
  return wait_for_answer<Result<Decisions>>(start);
}

Result<Decisions> Store::check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                   std::optional<Micros> now) {
  if (std::optional<Error> wrong = StoreRequest::problem(checks, cost, now)) {
    return std::unexpected(std::move(*wrong));
  }
  return decide_and_wait(StoreRequest(checks, cost, now, Operation::kCheck));
}

Result<Decision> Store::check(std::string_view key, const Limit& limit, std::int64_t cost,
                              std::optional<Micros> now) {
  const KeyedLimit one[] = {{key, &limit}};
  Result<Decisions> decisions = check_all(one, cost, now);
  if (!decisions) return std::unexpected(std::move(decisions.error()));
  return decisions->front();
}

void Store::check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                            std::optional<Micros> now, AllCallback done) {
  Result<StoreRequest> request = StoreRequest::make(checks, cost, now);
  if (!request) return complete_inline(done, Result<Decisions>(std::unexpected(request.error())));
  decide(*request, std::move(done));
}

void Store::check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                        std::optional<Micros> now, Callback done) {
  const KeyedLimit one[] = {{key, &limit}};
  check_all_async(one, cost, now, [done = std::move(done)](Result<Decisions> decisions) {
    if (!decisions) return done(std::unexpected(decisions.error()));
    done(decisions->front());
  });
}

}  // namespace spillway
