// The wrapper stack around a Redis backend (src/open_store/wrapper_stack.h): the list, innermost
// first, and its application. A request passes the wrappers outermost first (the lease store,
// the local fallback, the over-limit cache, the circuit breaker, then the backend).
#include "src/open_store/wrapper_stack.h"

#include <utility>

namespace spillway {
namespace {

// The stack, innermost first: docs/ARCHITECTURE.md quotes these names in this order.
constexpr StoreWrapper kRedisWrappers[] = {
    // Fails fast while the backend is down (failures 0: off).
    {"CircuitBreakerStore", [](const BackendOptions& o) { return o.breaker.failures > 0; },
     [](std::unique_ptr<Store> inner, BackendOptions& o) -> std::unique_ptr<Store> {
       return std::make_unique<CircuitBreakerStore>(std::move(inner), o.breaker);
     }},
    // Answers a remembered denial without a round trip (0 entries: off), on memory.clock.
    {"OverLimitCache", [](const BackendOptions& o) { return o.over_limit_cache > 0; },
     [](std::unique_ptr<Store> inner, BackendOptions& o) -> std::unique_ptr<Store> {
       return std::make_unique<OverLimitCache>(std::move(inner), o.over_limit_cache,
                                               o.memory.clock);
     }},
    // on_error: local: decides in a MemoryStore (a copy of memory's options: no entry's options
    // depend on another's running first) while the backend fails.
    {"LocalFallbackStore", [](const BackendOptions& o) { return o.local_fallback; },
     [](std::unique_ptr<Store> inner, BackendOptions& o) -> std::unique_ptr<Store> {
       return std::make_unique<LocalFallbackStore>(
           std::move(inner), std::make_unique<MemoryStore>(MemoryStoreOptions(o.memory)));
     }},
    // Quota leases for keys checked with a LeaseSpec (`sync: lease`).
    {"LeaseStore", [](const BackendOptions& o) { return o.leases.has_value(); },
     [](std::unique_ptr<Store> inner, BackendOptions& o) -> std::unique_ptr<Store> {
       return std::make_unique<LeaseStore>(std::move(inner), std::move(*o.leases));
     }},
};

}  // namespace

std::span<const StoreWrapper> redis_wrapper_stack() { return kRedisWrappers; }

std::unique_ptr<Store> wrap_redis_backend(std::unique_ptr<Store> backend, BackendOptions& options) {
  for (const StoreWrapper& wrapper : kRedisWrappers) {
    if (wrapper.enabled(options)) backend = wrapper.wrap(std::move(backend), options);
  }
  return backend;
}

}  // namespace spillway
