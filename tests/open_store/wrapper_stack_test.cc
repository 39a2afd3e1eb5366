// src/open_store/wrapper_stack.h: the one list of wrappers open_store puts around a Redis
// backend. Its names are in the documented order (innermost first), and over a stand-in backend
// each option adds its wrapper, all of them nest in that order, and no option adds none.
#include "src/open_store/wrapper_stack.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "spillway/circuit_breaker.h"
#include "spillway/forwarding_store.h"
#include "spillway/lease_store.h"
#include "spillway/local_fallback.h"
#include "spillway/over_limit_cache.h"

namespace spillway {
namespace {

// Stands for the Redis backend: admits everything at once.
class StandIn final : public Store {
 public:
  void decide(const StoreRequest& request, AllCallback done) override {
    done(Decisions(request.checks().size(), Decision{.allowed = true}));
  }
};

// Options with no wrapper enabled (the breaker is on by default) and no background threads.
BackendOptions no_wrappers() {
  BackendOptions options;
  options.memory.sweep_interval = std::chrono::milliseconds(0);
  options.breaker.failures = 0;
  return options;
}

// The wrappers' class names from the outermost in, down to (not including) `backend`.
std::vector<std::string> layers_of(const Store& store, const Store* backend) {
  std::vector<std::string> out;
  const Store* at = &store;
  while (at != backend) {
    if (dynamic_cast<const LeaseStore*>(at)) {
      out.push_back("LeaseStore");
    } else if (dynamic_cast<const LocalFallbackStore*>(at)) {
      out.push_back("LocalFallbackStore");
    } else if (dynamic_cast<const OverLimitCache*>(at)) {
      out.push_back("OverLimitCache");
    } else if (dynamic_cast<const CircuitBreakerStore*>(at)) {
      out.push_back("CircuitBreakerStore");
    } else {
      out.push_back("unknown");
      break;
    }
    at = &dynamic_cast<const ForwardingStore*>(at)->inner();
  }
  return out;
}

TEST(WrapperStack, ListsTheWrappersInnermostFirst) {
  std::vector<std::string> names;
  for (const StoreWrapper& wrapper : redis_wrapper_stack()) names.emplace_back(wrapper.name);
  EXPECT_EQ(names, (std::vector<std::string>{"CircuitBreakerStore", "OverLimitCache",
                                             "LocalFallbackStore", "LeaseStore"}));
}

TEST(WrapperStack, NoOptionLeavesTheBackendBare) {
  auto backend = std::make_unique<StandIn>();
  const Store* raw = backend.get();
  BackendOptions options = no_wrappers();
  EXPECT_EQ(wrap_redis_backend(std::move(backend), options).get(), raw);
}

TEST(WrapperStack, EachOptionAddsItsWrapper) {
  struct Case {
    std::string wrapper;
    void (*set)(BackendOptions&);
  };
  const Case cases[] = {
      {"CircuitBreakerStore", [](BackendOptions& o) { o.breaker.failures = 5; }},
      {"OverLimitCache", [](BackendOptions& o) { o.over_limit_cache = 16; }},
      {"LocalFallbackStore", [](BackendOptions& o) { o.local_fallback = true; }},
      {"LeaseStore", [](BackendOptions& o) { o.leases = LeaseStoreOptions{.sweep_interval = {}}; }},
  };
  for (const Case& c : cases) {
    auto backend = std::make_unique<StandIn>();
    const Store* raw = backend.get();
    BackendOptions options = no_wrappers();
    c.set(options);
    const std::unique_ptr<Store> store = wrap_redis_backend(std::move(backend), options);
    EXPECT_EQ(layers_of(*store, raw), std::vector<std::string>{c.wrapper});
  }
}

TEST(WrapperStack, EveryOptionNestsTheWrappersInTheListedOrder) {
  auto backend = std::make_unique<StandIn>();
  const Store* raw = backend.get();
  BackendOptions options = no_wrappers();
  options.breaker.failures = 5;
  options.over_limit_cache = 16;
  options.local_fallback = true;
  options.leases = LeaseStoreOptions{.sweep_interval = {}};
  const std::unique_ptr<Store> store = wrap_redis_backend(std::move(backend), options);
  EXPECT_EQ(layers_of(*store, raw),
            (std::vector<std::string>{"LeaseStore", "LocalFallbackStore", "OverLimitCache",
                                      "CircuitBreakerStore"}));
  // And it decides, through all of them.
  const Limit limit = *Limit::make(Algorithm::kGcra, 10, 1'000'000);
  auto decision = store->check("k", limit);
  ASSERT_TRUE(decision.has_value()) << decision.error().message;
  EXPECT_TRUE(decision->allowed);
}

}  // namespace
}  // namespace spillway
