// LocalQuotaShares (spillway/quota_shares.h): the members of each bucket in this process, in
// maps found by string_view, under one mutex (Impl: the header keeps only a pointer to it).
// Times: Micros on the clock's time base.
#include "spillway/quota_shares.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "src/core/inline_completion.h"

namespace spillway {

struct LocalQuotaShares::Impl {
  struct Held {
    std::int64_t demand = 0;
    Micros until = 0;  // the member is gone at this time unless it renews
  };
  explicit Impl(std::shared_ptr<const Clock> c) : clock(std::move(c)) {}

  const std::shared_ptr<const Clock> clock;
  std::mutex mutex;  // guards calls and buckets
  std::uint64_t calls = 0;
  std::map<std::string, std::map<std::string, Held, std::less<>>, std::less<>> buckets;
};

LocalQuotaShares::LocalQuotaShares(std::shared_ptr<const Clock> clock)
    : impl_(std::make_unique<Impl>(clock ? std::move(clock) : std::make_shared<SystemClock>())) {}

LocalQuotaShares::~LocalQuotaShares() = default;

void LocalQuotaShares::exchange(std::string_view bucket, std::string_view member,
                                std::int64_t demand, Micros hold, Done done) {
  std::vector<std::int64_t> demands;
  {
    const Micros now = impl_->clock->now();
    std::lock_guard lock(impl_->mutex);
    auto& buckets = impl_->buckets;
    if (++impl_->calls % 1024 == 0) {  // buckets whose members all went quiet are forgotten
      std::erase_if(buckets, [now](const auto& b) {
        return std::all_of(b.second.begin(), b.second.end(),
                           [now](const auto& m) { return m.second.until <= now; });
      });
    }
    // Found by string_view: a bucket and an Envoy already held cost no allocation.
    auto in_bucket = buckets.find(bucket);
    if (in_bucket == buckets.end()) in_bucket = buckets.try_emplace(std::string(bucket)).first;
    auto& members = in_bucket->second;
    auto mine = members.find(member);
    if (mine == members.end()) mine = members.try_emplace(std::string(member)).first;
    mine->second = {.demand = demand, .until = now + std::max<Micros>(hold, 1)};
    std::erase_if(members, [now](const auto& m) { return m.second.until <= now; });
    while (members.size() > kMaxShareMembers) {
      auto oldest = std::min_element(members.begin(), members.end(), [](auto& a, auto& b) {
        return a.second.until < b.second.until;
      });
      if (oldest->first == member) break;
      members.erase(oldest);
    }
    demands.push_back(demand);
    for (const auto& [id, held] : members) {
      if (id != member && demands.size() < kMaxShareMembers) demands.push_back(held.demand);
    }
  }
  complete_inline(done, Result<std::vector<std::int64_t>>(std::move(demands)));
}

void LocalQuotaShares::leave(std::string_view bucket, std::string_view member) {
  std::lock_guard lock(impl_->mutex);
  auto& buckets = impl_->buckets;
  auto found = buckets.find(bucket);
  if (found == buckets.end()) return;
  if (auto m = found->second.find(member); m != found->second.end()) found->second.erase(m);
  if (found->second.empty()) buckets.erase(found);
}

}  // namespace spillway
