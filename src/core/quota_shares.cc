#include "spillway/quota_shares.h"

#include <algorithm>
#include <utility>

#include "src/core/inline_completion.h"

namespace spillway {

LocalQuotaShares::LocalQuotaShares(std::shared_ptr<const Clock> clock)
    : clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()) {}

void LocalQuotaShares::exchange(std::string_view bucket, std::string_view member,
                                std::int64_t demand, Micros hold, Done done) {
  std::vector<std::int64_t> demands;
  {
    const Micros now = clock_->now();
    std::lock_guard lock(mutex_);
    if (++calls_ % 1024 == 0) {  // buckets whose members all went quiet are forgotten
      std::erase_if(buckets_, [now](const auto& b) {
        return std::all_of(b.second.begin(), b.second.end(),
                           [now](const auto& m) { return m.second.until <= now; });
      });
    }
    // Found by string_view: a bucket and an Envoy already held cost no allocation.
    auto in_bucket = buckets_.find(bucket);
    if (in_bucket == buckets_.end()) in_bucket = buckets_.try_emplace(std::string(bucket)).first;
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
  std::lock_guard lock(mutex_);
  auto found = buckets_.find(bucket);
  if (found == buckets_.end()) return;
  if (auto m = found->second.find(member); m != found->second.end()) found->second.erase(m);
  if (found->second.empty()) buckets_.erase(found);
}

}  // namespace spillway
