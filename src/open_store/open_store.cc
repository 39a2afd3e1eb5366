// open_store, check_store and open_tenants (spillway/open_store.h): a backend URL to its store
// (wrapped as src/open_store/wrapper_stack.h says) or its tenant directory.
#include "spillway/open_store.h"

#include <string>

#include "src/core/backend_schemes.h"
#include "src/memory/tenant_file.h"
#include "src/open_store/wrapper_stack.h"
#include "src/redis/redis_tenants.h"

namespace spillway {

bool is_redis_url(std::string_view url) { return is_redis_backend_url(url); }

namespace {

bool is_memory_url(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  return scheme != nullptr && scheme->kind == BackendKind::kMemory;
}

std::unexpected<Error> not_a_backend(std::string_view url) {
  return invalid_argument("backend \"" + printable_url(url) + "\" is not a backend URL (use " +
                          backend_url_forms() + ")");
}

}  // namespace

Result<void> check_store(std::string_view url, const BackendOptions& options) {
  if (is_memory_url(url)) return {};
  if (is_redis_url(url)) {
    RedisStoreOptions redis = options.redis;
    redis.url = std::string(url);
    return RedisStore::check_options(redis);
  }
  return not_a_backend(url);
}

Result<std::unique_ptr<Store>> open_store(std::string_view url, BackendOptions options) {
  if (is_memory_url(url)) {
    return std::make_unique<MemoryStore>(std::move(options.memory));
  }
  if (is_redis_url(url)) {
    options.redis.url = std::string(url);
    auto redis = RedisStore::open(std::move(options.redis));
    if (!redis) return std::unexpected(redis.error());
    // The wrappers the options ask for, in the stack's one order (src/open_store/wrapper_stack.cc).
    return wrap_redis_backend(std::move(*redis), options);
  }
  return not_a_backend(url);
}

Result<std::unique_ptr<TenantDirectory>> open_tenants(std::string_view url,
                                                      const BackendOptions& options,
                                                      TenantOptions tenants) {
  if (is_memory_url(url)) {
    auto directory = FileTenantDirectory::open(tenants.file, options.redis.key_hash);
    if (!directory) return std::unexpected(directory.error());
    return std::unique_ptr<TenantDirectory>(std::move(*directory));
  }
  if (is_redis_url(url)) {
    if (!tenants.file.empty()) {
      return invalid_argument(
          "tenants_file is for the memory backend; on Redis the records "
          "live in Redis");
    }
    RedisStoreOptions redis = options.redis;
    redis.url = std::string(url);
    redis::RedisTenantOptions follow;
    follow.log = std::move(tenants.log);
    auto directory = redis::RedisTenantDirectory::open(std::move(redis), std::move(follow));
    if (!directory) return std::unexpected(directory.error());
    return std::unique_ptr<TenantDirectory>(std::move(*directory));
  }
  return not_a_backend(url);
}

}  // namespace spillway
