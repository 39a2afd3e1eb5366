#include "src/open_store/open_quota_shares.h"

#include <utility>

#include "src/redis/redis_quota_shares.h"

namespace spillway {

Result<std::unique_ptr<QuotaShares>> open_quota_shares(std::string_view url,
                                                       const BackendOptions& options,
                                                       std::shared_ptr<const Clock> clock) {
  if (!is_redis_url(url)) return std::make_unique<LocalQuotaShares>(std::move(clock));
  RedisStoreOptions redis = options.redis;
  redis.url = std::string(url);
  auto shares = redis::RedisQuotaShares::open(std::move(redis));
  if (!shares) return std::unexpected(shares.error());
  return std::unique_ptr<QuotaShares>(std::move(*shares));
}

}  // namespace spillway
