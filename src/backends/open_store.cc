#include "spillway/open_store.h"

#include <string>

namespace spillway {

bool is_redis_url(std::string_view url) {
  for (std::string_view scheme : {"redis://", "rediss://", "unix://", "redis+cluster://",
                                  "rediss+cluster://", "redis+sentinel://"}) {
    if (url.starts_with(scheme)) return true;
  }
  return false;
}

Result<std::unique_ptr<Store>> open_store(std::string_view url, BackendOptions options) {
  if (url == "memory" || url == "memory://") {
    return std::make_unique<MemoryStore>(std::move(options.memory));
  }
  if (is_redis_url(url)) {
    options.redis.url = std::string(url);
    auto redis = RedisStore::open(std::move(options.redis));
    if (!redis) return std::unexpected(redis.error());
    std::unique_ptr<Store> store = std::move(*redis);
    if (options.breaker.failures > 0) {
      store = std::make_unique<CircuitBreakerStore>(std::move(store), options.breaker);
    }
    if (options.over_limit_cache > 0) {
      store = std::make_unique<OverLimitCache>(std::move(store), options.over_limit_cache,
                                               options.memory.clock);
    }
    if (options.local_fallback) {
      store = std::make_unique<LocalFallbackStore>(
          std::move(store), std::make_unique<MemoryStore>(std::move(options.memory)));
    }
    return store;
  }
  return invalid_argument("backend \"" + std::string(url) +
                          "\" is not a backend URL (use memory, redis://host:port, "
                          "rediss://host:port, redis+cluster://host:port,host:port or "
                          "redis+sentinel://host:port,host:port/MASTER_NAME)");
}

}  // namespace spillway
