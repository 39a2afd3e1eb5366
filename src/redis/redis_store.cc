#include "spillway/redis_store.h"

#include "src/redis/client.h"
#include "src/redis/scripts.h"

namespace spillway {
namespace {

// The script's reply {allowed, limit, remaining, retry_after, reset_after} as a Decision.
Result<Decision> to_decision(const redis::Reply& reply) {
  if (reply.is_error()) {
    return std::unexpected(Error{Errc::kUnavailable, "redis replied: " + reply.text});
  }
  if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != 5) {
    return std::unexpected(
        Error{Errc::kInternal, "unexpected reply shape from the limiter script"});
  }
  for (const redis::Reply& e : reply.elements) {
    if (e.type != redis::Reply::Type::kInteger) {
      return std::unexpected(Error{Errc::kInternal, "non-integer field in the limiter's reply"});
    }
  }
  return Decision{.allowed = reply.elements[0].integer == 1,
                  .limit = reply.elements[1].integer,
                  .remaining = reply.elements[2].integer,
                  .retry_after = reply.elements[3].integer,
                  .reset_after = reply.elements[4].integer};
}

bool is_noscript(const Result<redis::Reply>& reply) {
  return reply && reply->is_error() && reply->text.starts_with("NOSCRIPT");
}

}  // namespace

Result<std::unique_ptr<RedisStore>> RedisStore::open(RedisStoreOptions options) {
  auto client_options = redis::parse_redis_url(options.url);
  if (!client_options) return std::unexpected(client_options.error());
  if (options.pool_size < 1) {
    return invalid_argument("redis pool size must be at least 1, got " +
                            std::to_string(options.pool_size));
  }
  if (options.timeout.count() < 1) return invalid_argument("redis timeout must be at least 1ms");
  if (options.key_prefix.empty()) return invalid_argument("redis key prefix must not be empty");
  client_options->pool_size = options.pool_size;
  client_options->timeout = options.timeout;
  auto client = std::make_unique<redis::Client>(*client_options);
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(options), std::move(client)));
}

RedisStore::RedisStore(RedisStoreOptions options, std::unique_ptr<redis::Client> client)
    : options_(std::move(options)), client_(std::move(client)) {}

RedisStore::~RedisStore() = default;

std::string RedisStore::storage_key(std::string_view key, const Limit& limit) const {
  std::string out = options_.key_prefix;
  out += ':';
  out += algorithm_name(limit.algorithm());
  for (std::int64_t n : {limit.limit(), limit.period(), limit.burst()}) {
    out += ':';
    out += std::to_string(n);
  }
  out += ":{";
  out += key;
  out += '}';
  return out;
}

Result<Decision> RedisStore::check(std::string_view key, const Limit& limit, std::int64_t cost,
                                   std::optional<Micros> now) {
  if (Result<void> valid = validate_check(key, cost, now); !valid) {
    return std::unexpected(valid.error());
  }
  const Algorithm algorithm = limit.algorithm();
  const std::vector<std::string> evalsha{"EVALSHA",
                                         redis::script_sha(algorithm),
                                         "1",
                                         storage_key(key, limit),
                                         std::to_string(limit.limit()),
                                         std::to_string(limit.period()),
                                         std::to_string(limit.burst()),
                                         std::to_string(limit.limit_units()),
                                         std::to_string(limit.period_units()),
                                         std::to_string(cost),
                                         now ? std::to_string(*now) : std::string(),
                                         std::to_string(options_.ttl_floor.count())};
  Result<redis::Reply> reply = client_->call(evalsha);
  if (is_noscript(reply)) {
    // The server lost its scripts (restart, failover, SCRIPT FLUSH): load and retry, once.
    Result<redis::Reply> loaded =
        client_->call({"SCRIPT", "LOAD", std::string(redis::script_source(algorithm))});
    if (!loaded) return std::unexpected(loaded.error());
    if (loaded->is_error()) {
      return std::unexpected(Error{Errc::kUnavailable, "SCRIPT LOAD failed: " + loaded->text});
    }
    reply = client_->call(evalsha);
  }
  if (!reply) return std::unexpected(reply.error());
  return to_decision(*reply);
}

bool RedisStore::connected() const { return client_->connected(); }

}  // namespace spillway
