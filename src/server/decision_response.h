// The HTTP answers of the decision endpoints (docs/SPEC.md §5), built from a decision, a policy's
// decision or a backend error: status, JSON body and the rate-limit headers (RateLimit-Policy and
// RateLimit of the IETF httpapi draft, X-RateLimit-*, Retry-After). Pure functions; thread-safe.
// The Service decides which one applies and counts it in the metrics.
#pragma once

#include <chrono>
#include <string_view>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "spillway/policy_engine.h"
#include "src/server/http_server.h"

namespace spillway::server {

// On GET /v1/auth's answer to a request admitted after a delay (shaping): the delay in ms, the
// time the answer was held before it was sent.
inline constexpr std::string_view kDelayHeader = "X-Spillway-Delay-Ms";
// A denial within the share a layer kept from the request's priority (docs/SPEC.md §2.4): "1".
// nginx maps it to 503 (examples/nginx/spillway.conf); /v1/check says it in its body as well.
inline constexpr std::string_view kShedHeader = "X-Spillway-Shed";

// GET /v1/auth admitted after `delay` µs while server.max_delayed answers are held already: a
// 403 for nginx (X-Spillway-Denied-By: server.max_delayed, Retry-After: the delay in s).
HttpResponse held_answers_full_response(Micros delay);
// The mark of a held answer sent before its time, at shutdown (X-Spillway-Released: shutdown).
void mark_released_early(HttpResponse& response);

// `status` with {"error": message}.
HttpResponse error_response(int status, std::string_view message);

// POST /v1/limit: 200 admitted or 429 denied, the decision's fields and headers.
HttpResponse limit_decision_response(const Decision& decision, const Limit& limit);
// POST /v1/limit when the backend failed: on_error's answer (`allow`) with "backend_error".
HttpResponse limit_backend_error_response(const Limit& limit, bool allow, const Error& error);

// POST /v1/check (200/429 with every layer) or, for nginx, GET /v1/auth (204/403, no body and
// no Content-Type).
HttpResponse policy_decision_response(const policy::PolicyDecision& decision, bool for_nginx);
// The same endpoints when the backend failed: on_error's answer (`allow`) with "backend_error".
HttpResponse policy_backend_error_response(bool allow, bool for_nginx, const Error& error);

// A "reserve": true request (POST /v1/check, /v1/limit) that the store could not keep
// (Errc::kStoreFull: its reservations or keys at their maximum): 503 with Retry-After: 1,
// "allowed": false and the store's reason, whatever on_error says: a reservation that cannot be
// kept is never granted (nothing was charged). nginx's /v1/auth never reserves.
HttpResponse reservation_refused_response(const Error& error);

// An admitted "reserve": true answer (POST /v1/check, /v1/limit): adds "reservation" (its id)
// and "reservation_expires_ms" (how long it waits for its commit or cancel) to the JSON body.
void add_reservation(HttpResponse& response, std::string_view id, std::chrono::milliseconds ttl);

// An admitted request that holds concurrency slots (POST /v1/check, /v1/limit): adds "ticket"
// (the id POST /v1/release takes) and "ticket_expires_ms" (how long until its first hold expires
// unless released) to the JSON body.
void add_ticket(HttpResponse& response, std::string_view id, Micros expires);

// POST /v1/commit and /v1/cancel, settled: 200 with the id, what settled it and each layer's
// estimate, actual cost, units refunded and charged as debt, and its state after.
HttpResponse settled_response(std::string_view id, bool cancel, const Settled& settled);

// POST /v1/release, settled: 200 with the ticket and, per layer, what came back ("released": 1
// for a slot given back; 0 for a slot its hold_ttl had freed already, and for a rate layer, which
// keeps its charge) and its state after.
HttpResponse released_response(std::string_view id, const Settled& settled);

}  // namespace spillway::server
