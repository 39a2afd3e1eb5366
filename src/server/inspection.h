// What `spillway inspect` shows of one request, and what the admin API's GET /v1/inspect answers
// (docs/SPEC.md §4, §5.2): the backend, and for each layer that applies its limit, its key, on
// Redis the key name it is stored under, and its state now, read with a check of cost 0 (a peek:
// Store's contract is that it charges and changes nothing).
//
// One JSON form for both (inspection_json), so that `spillway inspect --json` prints the same
// object whether it read the state itself or a server read it; parse_inspection reads it back
// (the CLI's --admin prints the server's answer as text).
//
// Units: reset_after in microseconds (the JSON's reset_after_us). Pure data and functions, except
// inspect_layers, which waits for the store's answers (below). Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/policy_engine.h"
#include "spillway/store.h"

namespace spillway::server {

struct InspectedLayer {
  std::string name;
  bool shadow = false;
  std::optional<std::string> plan;       // a by_plan layer's plan ("custom": a tenant's own rate)
  std::string limit;                     // Limit::describe(), e.g. "gcra 60/1m"
  bool blocked = false;                  // a tenant record blocks the caller in this layer
  std::string key;                       // the layer's key, as the request path builds it
  std::optional<std::string> redis_key;  // the name the backend stores it under (Redis only)
  // The state now (remaining, limit, reset_after); nullopt when it was not read (the memory
  // backend, seen from another process) or could not be (then `error` says why).
  std::optional<Decision> now;
  std::optional<std::string> error;
};

struct Inspection {
  std::string backend;                   // backend.url as it may be shown (no password)
  std::optional<std::string> key_names;  // Redis: backend.key_hash's name ("sha256", …)
  // The plans shown are the config file's, not the tenant records' (read where the records are
  // not: the memory backend's records live in the serving process).
  bool plans_from_config = false;
  std::vector<InspectedLayer> layers;
};

// The name a backend stores a (key, limit) under (RedisStore::storage_key); empty: none (memory).
using StoredName = std::function<std::string(std::string_view key, const Limit& limit)>;

// One InspectedLayer per check of `checks` (from policy.resolve()), in order, each one's state
// read from `store` with a check of cost 0; `store` null: not read (`now` stays empty). A check
// that fails leaves `now` empty and sets `error`. Blocks the calling thread until each answer
// came (Store::decide_and_wait): never call it on a network store's I/O thread.
std::vector<InspectedLayer> inspect_layers(const policy::Policy& policy,
                                           std::span<const policy::Policy::Check> checks,
                                           Store* store, const StoredName& stored_name);

// The JSON object: {"backend", "key_names" (when set), "plans_from_config", "layers": [{"name",
// "shadow", "plan" (or null), "limit", "blocked", "key", "redis_key" (when set), "now":
// {"remaining", "limit", "reset_after_us"} or null, "error" (when set)}]}. Text that is not
// UTF-8 is written as \xNN (utf8_or_escaped, src/core/text.h).
std::string inspection_json(const Inspection& inspection);

// Reads inspection_json's object back. Errors (kInvalidArgument) name the first member that is
// missing or of the wrong type.
Result<Inspection> parse_inspection(std::string_view json);

}  // namespace spillway::server
