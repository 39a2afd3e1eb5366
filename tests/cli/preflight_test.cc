// What `serve` (and every command that opens the configured backend) gives the store: the
// config's backend fields mapped onto BackendOptions (src/cli/preflight.h).
#include "src/cli/preflight.h"

#include <gtest/gtest.h>

#include "src/config/config.h"

namespace spillway::cli {
namespace {

TEST(PreflightBackendOptions, RedisBatchingKnobsReachTheStore) {
  Result<policy::Config> config = policy::parse_config(
      "backend: {url: 'redis://127.0.0.1:6379', max_batch: 256, max_in_flight: 8, "
      "timeout: 75ms, over_limit_cache: 10}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const BackendOptions options = backend_options(*config);
  EXPECT_EQ(options.redis.max_batch, 256);
  EXPECT_EQ(options.redis.max_in_flight, 8);
  EXPECT_EQ(options.redis.timeout, std::chrono::milliseconds(75));
  EXPECT_EQ(options.over_limit_cache, 10u);
}

TEST(PreflightBackendOptions, UnsetKnobsKeepTheStoresDefaults) {
  Result<policy::Config> config =
      policy::parse_config("backend: {url: 'redis://127.0.0.1:6379'}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const BackendOptions options = backend_options(*config);
  EXPECT_EQ(options.redis.max_batch, RedisStoreOptions{}.max_batch);
  EXPECT_EQ(options.redis.max_in_flight, RedisStoreOptions{}.max_in_flight);
}

TEST(PreflightBackendOptions, MaxReservationsReachesTheMemoryStore) {
  Result<policy::Config> config = policy::parse_config("server: {max_reservations: 5000}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const BackendOptions options = backend_options(*config);
  EXPECT_EQ(options.memory.max_reservations, 5000u);
  EXPECT_EQ(options.memory.max_settled_reservations, 5000u);
  Result<policy::Config> defaults = policy::parse_config("server: {}\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_EQ(backend_options(*defaults).memory.max_reservations, 1'000'000u);
}

}  // namespace
}  // namespace spillway::cli
