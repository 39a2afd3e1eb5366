#include "spillway/open_store.h"

#include <string>

namespace spillway {

Result<std::unique_ptr<Store>> open_store(std::string_view url, BackendOptions options) {
  if (url == "memory" || url == "memory://") {
    return std::make_unique<MemoryStore>(std::move(options.memory));
  }
  if (url.starts_with("redis://") || url.starts_with("unix://")) {
    options.redis.url = std::string(url);
    auto store = RedisStore::open(std::move(options.redis));
    if (!store) return std::unexpected(store.error());
    return std::unique_ptr<Store>(std::move(*store));
  }
  if (url.starts_with("redis+cluster://")) {
    return std::unexpected(Error{Errc::kUnavailable, "redis cluster is not supported yet"});
  }
  return invalid_argument("backend \"" + std::string(url) +
                          "\" is not a backend URL (use memory or redis://host:port)");
}

}  // namespace spillway
