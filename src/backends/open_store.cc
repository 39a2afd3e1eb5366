#include "spillway/open_store.h"

#include <string>

namespace spillway {

Result<std::unique_ptr<Store>> open_store(std::string_view url, BackendOptions options) {
  if (url == "memory" || url == "memory://") {
    return std::make_unique<MemoryStore>(std::move(options.memory));
  }
  if (url.starts_with("redis://") || url.starts_with("unix://") ||
      url.starts_with("redis+cluster://")) {
    options.redis.url = std::string(url);
    auto store = RedisStore::open(std::move(options.redis));
    if (!store) return std::unexpected(store.error());
    if (options.breaker.failures <= 0) return std::unique_ptr<Store>(std::move(*store));
    return std::unique_ptr<Store>(
        std::make_unique<CircuitBreakerStore>(std::move(*store), options.breaker));
  }
  return invalid_argument("backend \"" + std::string(url) +
                          "\" is not a backend URL (use memory, redis://host:port or "
                          "redis+cluster://host:port,host:port)");
}

}  // namespace spillway
