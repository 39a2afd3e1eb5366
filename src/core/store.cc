// StoreRequest's validation and the Store forms built on decide(): the single-key and
// all-or-nothing checks, synchronous and asynchronous.
#include "spillway/store.h"

#include <sys/random.h>

#include <string>

#include "src/core/inline_completion.h"
#include "src/core/reservation_errors.h"
#include "src/core/text.h"
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
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (!plainly_valid(checks[i].key, cost, now)) {  // the error says which
      if (Result<void> valid = validate_check(checks[i].key, cost, now); !valid) {
        return valid.error();
      }
    }
    if (checks[i].cost < 0 && checks[i].cost != kRequestCost) {
      return invalid_argument("the cost of key \"" + std::string(checks[i].key) +
                              "\" must be 0 or more, got " + std::to_string(checks[i].cost))
          .error();
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
  if (operation == Operation::kReserve) {
    return invalid_argument("a reservation is built by StoreRequest::make_reserve");
  }
  return StoreRequest(checks, cost, now, operation);
}

Result<StoreRequest> StoreRequest::make_reserve(std::span<const KeyedLimit> checks,
                                                std::int64_t cost, std::optional<Micros> now,
                                                const ReserveSpec& spec) {
  if (std::optional<Error> wrong = problem(checks, cost, now)) return std::unexpected(*wrong);
  if (spec.id.empty() || spec.id.size() > kMaxReservationIdBytes) {
    return invalid_argument("a reservation id is 1 to " + std::to_string(kMaxReservationIdBytes) +
                            " bytes, got " + std::to_string(spec.id.size()));
  }
  if (spec.ttl.count() <= 0) return invalid_argument("a reservation's ttl must be above 0");
  if (spec.layers.size() != checks.size()) {
    return invalid_argument(
        "a reservation needs one label per key: " + std::to_string(spec.layers.size()) +
        " labels for " + std::to_string(checks.size()) + " keys");
  }
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (spec.layers[i].hold && !checks[i].limit->is_concurrency()) {
      return invalid_argument("layer " + std::string(spec.layers[i].label) +
                              " is marked a hold, but its limit is no concurrency limit");
    }
  }
  StoreRequest request(checks, cost, now, Operation::kReserve);
  request.reserve_ = &spec;
  return request;
}

std::string new_reservation_id() {
  // 16 bytes from the operating system's CSPRNG in one call (getrandom never returns short for
  // up to 256 bytes once the pool is ready; a signal may interrupt it: then ask again).
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  std::string id;
  id.reserve(22);
  append_base64url_128(id, bytes);
  return id;
}

std::optional<Error> settlement_problem(const Settlement& settlement) {
  const auto wrong = [](std::string message, std::string field) {
    return Error{Errc::kInvalidArgument, std::move(message), std::move(field)};
  };
  if (settlement.id.empty() || settlement.id.size() > kMaxReservationIdBytes) {
    return wrong("\"reservation\" must be a reservation id (1 to " +
                     std::to_string(kMaxReservationIdBytes) + " bytes)",
                 "reservation");
  }
  const auto bad_cost = [](std::int64_t cost) { return cost < 0 || cost > kMaxExact; };
  if (settlement.cost && bad_cost(*settlement.cost)) {
    return wrong(
        "\"cost\" must be a whole number from 0 to 2^52, got " + std::to_string(*settlement.cost),
        "cost");
  }
  for (std::size_t i = 0; i < settlement.costs.size(); ++i) {
    const LayerCost& c = settlement.costs[i];
    if (c.label.empty()) return wrong("\"costs\" names a layer with an empty name", "costs");
    if (bad_cost(c.cost)) {
      return wrong("\"costs\": the cost of " + std::string(c.label) +
                       " must be a whole number from 0 to 2^52, got " + std::to_string(c.cost),
                   "costs");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (settlement.costs[j].label == c.label) {
        return wrong("\"costs\" names " + std::string(c.label) + " twice", "costs");
      }
    }
  }
  if (settlement.release && (settlement.cancel || settlement.cost || !settlement.costs.empty())) {
    return wrong(
        "a release takes no cancel, cost or costs: it gives the slots back and keeps the "
        "rest",
        "ticket");
  }
  if (settlement.now && (*settlement.now < 0 || *settlement.now > kMaxNow)) {
    return wrong("now must be between 0 and 2^52 µs", "now");
  }
  return std::nullopt;
}

void Store::settle(const Settlement&, SettleCallback done) {
  complete_inline(done, Result<Settled>(std::unexpected(
                            Error{Errc::kInvalidArgument, "this backend keeps no reservations"})));
}

Result<Settled> Store::settle_and_wait(const Settlement& settlement) {
  auto start = [&](auto answer) { settle(settlement, std::move(answer)); };
  if (decides_inline()) {
    return take_inline_answer<Result<Settled>>(
        start, std::unexpected(Error{Errc::kInternal, "the store did not answer inline"}));
  }
  return wait_for_answer<Result<Settled>>(start);
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

Error reservation_not_found(std::string_view id) {
  return Error{Errc::kNotFound,
               "no reservation " + quote_for_error(id, 64) + ": never made, or expired",
               "reservation"};
}

Error reservation_already_settled(std::string_view id) {
  return Error{Errc::kConflict, "reservation " + quote_for_error(id, 64) + " is already settled",
               "reservation"};
}

Error reservation_not_a_ticket(std::string_view id) {
  return Error{Errc::kInvalidArgument,
               "reservation " + quote_for_error(id, 64) +
                   " holds no concurrency slot: it is not a ticket (settle it with /v1/commit or "
                   "/v1/cancel); nothing was changed",
               "ticket"};
}

Error reservation_has_no_layer(std::string_view label, std::span<const std::string> labels) {
  std::string names;
  for (const std::string& l : labels) names += (names.empty() ? "" : ", ") + l;
  return Error{Errc::kInvalidArgument,
               "\"costs\": the reservation has no layer " + quote_for_error(label, 64) +
                   " (it has " + names + ")",
               "costs"};
}

}  // namespace spillway
