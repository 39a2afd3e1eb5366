// Where the RLQS buckets' members and demands live (spillway/quota_shares.h): Redis for every
// Redis URL (one hash per bucket, src/redis/redis_quota_shares.h), else this process (memory).
// Errors as RedisStore::open's for the URL and options.
#pragma once

#include <memory>
#include <string_view>

#include "spillway/open_store.h"
#include "spillway/quota_shares.h"

namespace spillway {

Result<std::unique_ptr<QuotaShares>> open_quota_shares(
    std::string_view url, const BackendOptions& options,
    std::shared_ptr<const Clock> clock = nullptr);

}  // namespace spillway
