#include "src/redis/redis_quota_shares.h"

#include <charconv>
#include <utility>
#include <vector>

#include "src/redis/key_slot.h"
#include "src/redis/reply.h"
#include "src/redis/script_target.h"
#include "src/redis/scripts.h"

namespace spillway::redis {

Result<std::unique_ptr<RedisQuotaShares>> RedisQuotaShares::open(RedisStoreOptions options) {
  if (auto checked = RedisStore::check_options(options); !checked) {
    return std::unexpected(checked.error());
  }
  auto digest = KeyDigest::make(options.key_hash);
  if (!digest) return std::unexpected(digest.error());
  RedisStoreOptions target_options = options;
  target_options.pool_size = 1;
  auto target = open_script_target(std::move(target_options));
  if (!target) return std::unexpected(target.error());
  return std::unique_ptr<RedisQuotaShares>(
      new RedisQuotaShares(std::move(*digest), std::move(options), std::move(*target)));
}

RedisQuotaShares::RedisQuotaShares(KeyDigest digest, RedisStoreOptions options,
                                   std::unique_ptr<ScriptTarget> target)
    : digest_(std::move(digest)), options_(std::move(options)), target_(std::move(target)) {}

RedisQuotaShares::~RedisQuotaShares() { target_.reset(); }

void RedisQuotaShares::exchange(std::string_view bucket, std::string_view member,
                                std::int64_t demand, Micros hold, Done done) {
  call(bucket, member, demand, std::max<std::int64_t>(1, (hold + 999) / 1000), std::move(done));
}

void RedisQuotaShares::leave(std::string_view bucket, std::string_view member) {
  call(bucket, member, 0, 0, [](auto) {});
}

void RedisQuotaShares::call(std::string_view bucket, std::string_view member, std::int64_t demand,
                            std::int64_t hold_ms, Done done) {
  std::string key = options_.key_prefix + ":rlqs:{";
  digest_.append(key, bucket);
  key += '}';
  const std::uint16_t slot = target_->one_node() ? 0 : key_slot(key);
  auto args = std::make_shared<std::vector<std::string>>(std::vector<std::string>{
      "", "", "1", std::move(key), std::string(member), std::to_string(demand),
      std::to_string(hold_ms), std::to_string(kMaxShareMembers)});
  const Script script{quota_share_script_source(), &quota_share_script_sha(), true};
  const auto deadline = deadline_in(options_.timeout);
  target_->run(slot, script, std::move(args), deadline, [done = std::move(done)](Result<Reply> r) {
    if (!r) return done(std::unexpected(r.error()));
    if (r->is_error() || r->type != Reply::Type::kArray) {
      return done(
          std::unexpected(Error{Errc::kUnavailable, "rlqs shares: unexpected reply " + r->text}));
    }
    std::vector<std::int64_t> demands;
    demands.reserve(r->elements.size());
    for (const Reply& e : r->elements) {
      std::int64_t value = -1;
      if (e.type == Reply::Type::kInteger) {
        value = e.integer;
      } else {
        std::from_chars(e.text.data(), e.text.data() + e.text.size(), value);
      }
      demands.push_back(value);
    }
    done(std::move(demands));
  });
}

}  // namespace spillway::redis
