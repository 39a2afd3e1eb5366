// include/spillway/forwarding_store.h: every store wrapper passes on what it does not change. A
// spy store under each wrapper (the circuit breaker, the over-limit cache, the lease store, the
// local fallback) sees settle, probe, wait_ready and clear_caches arrive, and each wrapper answers
// decides_inline() as the store it wraps: true over a store that decides in place, false over one
// that does not (the over-limit cache and the local fallback used to say false over both).
#include "spillway/forwarding_store.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spillway/circuit_breaker.h"
#include "spillway/lease_store.h"
#include "spillway/local_fallback.h"
#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"

namespace spillway {
namespace {

// What reached the spy, by method name.
struct SpyCalls {
  std::vector<std::string> names;
  bool saw(const std::string& name) const {
    for (const std::string& n : names) {
      if (n == name) return true;
    }
    return false;
  }
};

// A store that admits everything at once and records the calls it gets; `inline_answers` is
// what it says of decides_inline().
class SpyStore final : public Store {
 public:
  SpyStore(std::shared_ptr<SpyCalls> calls, bool inline_answers)
      : calls_(std::move(calls)), inline_(inline_answers) {}
  void decide(const StoreRequest& request, AllCallback done) override {
    calls_->names.push_back("decide");
    Decisions decisions(request.checks().size(), Decision{.allowed = true});
    done(std::move(decisions));
  }
  void settle(const Settlement&, SettleCallback done) override {
    calls_->names.push_back("settle");
    done(Settled{});
  }
  Result<void> probe() override {
    calls_->names.push_back("probe");
    return {};
  }
  Result<void> wait_ready(std::chrono::milliseconds) override {
    calls_->names.push_back("wait_ready");
    return {};
  }
  void clear_caches() override { calls_->names.push_back("clear_caches"); }
  bool decides_inline() const override { return inline_; }

 private:
  std::shared_ptr<SpyCalls> calls_;
  bool inline_;
};

// Each wrapper around `inner`.
std::vector<std::pair<std::string, std::unique_ptr<Store>>> wrappers_of(
    const std::function<std::unique_ptr<Store>()>& inner) {
  std::vector<std::pair<std::string, std::unique_ptr<Store>>> out;
  out.emplace_back("CircuitBreakerStore", std::make_unique<CircuitBreakerStore>(inner()));
  out.emplace_back("OverLimitCache", std::make_unique<OverLimitCache>(inner(), 16));
  out.emplace_back("LeaseStore",
                   std::make_unique<LeaseStore>(inner(), LeaseStoreOptions{.sweep_interval = {}}));
  out.emplace_back("LocalFallbackStore",
                   std::make_unique<LocalFallbackStore>(inner(), std::make_unique<MemoryStore>()));
  return out;
}

TEST(ForwardingStore, EveryWrapperPassesOnWhatItDoesNotChange) {
  auto calls = std::make_shared<SpyCalls>();
  for (auto& [name, wrapper] :
       wrappers_of([&] { return std::make_unique<SpyStore>(calls, false); })) {
    calls->names.clear();
    Settlement settlement;
    settlement.id = "r1";
    (void)wrapper->settle_and_wait(settlement);
    EXPECT_TRUE(wrapper->probe().has_value()) << name;
    EXPECT_TRUE(wrapper->wait_ready(std::chrono::milliseconds(10)).has_value()) << name;
    wrapper->clear_caches();
    for (const char* method : {"settle", "probe", "wait_ready", "clear_caches"}) {
      EXPECT_TRUE(calls->saw(method)) << name << " did not pass " << method << " on";
    }
  }
}

TEST(ForwardingStore, EveryWrapperDecidesInlineAsTheStoreItWraps) {
  for (const bool inline_answers : {true, false}) {
    auto calls = std::make_shared<SpyCalls>();
    for (auto& [name, wrapper] :
         wrappers_of([&] { return std::make_unique<SpyStore>(calls, inline_answers); })) {
      EXPECT_EQ(wrapper->decides_inline(), inline_answers) << name;
    }
  }
  // And over the in-process store itself.
  for (auto& [name, wrapper] : wrappers_of([] { return std::make_unique<MemoryStore>(); })) {
    EXPECT_TRUE(wrapper->decides_inline()) << name << " over a MemoryStore";
  }
}

}  // namespace
}  // namespace spillway
