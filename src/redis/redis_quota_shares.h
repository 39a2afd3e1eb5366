// The RLQS bucket members of every server on one Redis (spillway/quota_shares.h): one hash per
// bucket, `<prefix>:rlqs:{<the bucket's digest>}` (backend.key_hash, as every key that holds a
// caller's values: no descriptor value in a key name), member -> "<demand> <until>", renewed, read
// and pruned in one atomic script (lua/quota_share.lua) on the Redis server's clock; the hash
// expires with its last member. One script call per exchange, on its own connection (pool size 1).
//
// Thread safety: as QuotaShares. Ownership: owns its connection; destroying it fails the calls
// in flight (kUnavailable).
#pragma once

#include <memory>
#include <string>

#include "spillway/key_hash.h"
#include "spillway/quota_shares.h"
#include "spillway/redis_store.h"

namespace spillway::redis {

class ScriptTarget;

class RedisQuotaShares final : public QuotaShares {
 public:
  // Errors as RedisStore::open's for the same options.
  static Result<std::unique_ptr<RedisQuotaShares>> open(RedisStoreOptions options);
  ~RedisQuotaShares() override;

  void exchange(std::string_view bucket, std::string_view member, std::int64_t demand, Micros hold,
                Done done) override;
  void leave(std::string_view bucket, std::string_view member) override;

 private:
  RedisQuotaShares(KeyDigest digest, RedisStoreOptions options,
                   std::unique_ptr<ScriptTarget> target);
  void call(std::string_view bucket, std::string_view member, std::int64_t demand,
            std::int64_t hold_ms, Done done);

  KeyDigest digest_;
  RedisStoreOptions options_;
  std::unique_ptr<ScriptTarget> target_;
};

}  // namespace spillway::redis
