// The one table of backend URL schemes (src/core/backend_schemes.h).
#include "src/core/backend_schemes.h"

#include <gtest/gtest.h>

#include <string>

namespace spillway {
namespace {

TEST(BackendSchemes, EachUrlFindsItsBackendAndWhetherItUsesTls) {
  struct Case {
    std::string_view url;
    BackendKind kind;
    bool tls;
    std::string_view name;
  };
  for (const Case& c : {
           Case{"memory", BackendKind::kMemory, false, "memory"},
           Case{"memory://", BackendKind::kMemory, false, "memory"},
           Case{"redis://127.0.0.1:6379/0", BackendKind::kRedis, false, "redis"},
           Case{"rediss://h:6380", BackendKind::kRedis, true, "rediss"},
           Case{"unix:///run/redis.sock", BackendKind::kRedisUnix, false, "unix"},
           Case{"redis+cluster://a:1,b:2", BackendKind::kRedisCluster, false, "redis+cluster"},
           Case{"rediss+cluster://a:1", BackendKind::kRedisCluster, true, "rediss+cluster"},
           Case{"redis+sentinel://a:1/m", BackendKind::kRedisSentinel, false, "redis+sentinel"},
       }) {
    const BackendScheme* scheme = find_backend_scheme(c.url);
    ASSERT_NE(scheme, nullptr) << c.url;
    EXPECT_EQ(scheme->kind, c.kind) << c.url;
    EXPECT_EQ(scheme->tls, c.tls) << c.url;
    EXPECT_EQ(scheme->name, c.name) << c.url;
    EXPECT_EQ(is_redis_backend_url(c.url), c.kind != BackendKind::kMemory) << c.url;
  }
}

TEST(BackendSchemes, UnknownUrlsFindNothing) {
  for (const std::string_view url : {"", "memory:", "memory://x", "memoryx", "http://h", "redis:/h",
                                     "REDIS://h", "redis+x://h", "rediss+sentinel://h/m"}) {
    EXPECT_EQ(find_backend_scheme(url), nullptr) << url;
    EXPECT_FALSE(is_redis_backend_url(url)) << url;
  }
}

}  // namespace
}  // namespace spillway
