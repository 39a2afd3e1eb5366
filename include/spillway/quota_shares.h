// What the Envoys holding each RLQS bucket ask for (docs/SPEC.md §9.7), shared by every server of
// one backend, so that a bucket's limit is divided max-min fair between all its Envoys whichever
// server their streams reach. Each stream is a member of the buckets it holds, with its demand
// (units per fill interval) and a hold time; a member not renewed within its hold time is gone.
//
// LocalQuotaShares keeps them in the process (the memory backend: one server); the Redis backends
// keep them in Redis (src/redis/redis_quota_shares.h), opened by open_quota_shares
// (src/open_store/open_quota_shares.h).
//
// Thread safety: every QuotaShares is safe to call from many threads at once. Ownership: the
// caller owns it; calls in flight when it is destroyed get kUnavailable or their answer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/clock.h"
#include "spillway/error.h"

namespace spillway {

inline constexpr std::size_t kMaxShareMembers = 256;  // members returned per bucket at most

class QuotaShares {
 public:
  virtual ~QuotaShares() = default;
  using Done = std::function<void(Result<std::vector<std::int64_t>>)>;
  // `member` (a stream's unguessable id) holds `bucket` wanting `demand` units per fill interval
  // (-1: not known yet) for `hold` µs (> 0) from now. `done` gets the demands of the members
  // holding the bucket now, this one's first (at most kMaxShareMembers), exactly once, possibly
  // on another thread, possibly before this returns; kUnavailable / kTimeout when the backend
  // failed. `done` must not block.
  virtual void exchange(std::string_view bucket, std::string_view member, std::int64_t demand,
                        Micros hold, Done done) = 0;
  // `member` no longer holds `bucket` (best effort: no answer; a lost call expires with the hold).
  virtual void leave(std::string_view bucket, std::string_view member) = 0;
};

// The members in this process. Memory: at most kMaxShareMembers per bucket (the oldest renewal
// goes first); a bucket without members is forgotten. Answers at once, through complete_inline
// (src/core/inline_completion.h). Every call takes one mutex. Shares `clock` (nullptr: the
// system clock).
class LocalQuotaShares final : public QuotaShares {
 public:
  explicit LocalQuotaShares(std::shared_ptr<const Clock> clock = nullptr);
  ~LocalQuotaShares() override;
  void exchange(std::string_view bucket, std::string_view member, std::int64_t demand, Micros hold,
                Done done) override;
  void leave(std::string_view bucket, std::string_view member) override;

 private:
  // The clock, the buckets and their members, and their mutex: src/core/quota_shares.cc.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
