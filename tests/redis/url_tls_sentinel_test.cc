// rediss://, rediss+cluster:// and redis+sentinel:// URLs: what they parse into, and errors that
// name the wrong part.
#include <gtest/gtest.h>

#include <string>

#include "src/redis/url.h"

namespace spillway::redis {
namespace {

TEST(TlsUrl, RedissWithoutParametersVerifiesAgainstTheSystemStore) {
  Result<ClientOptions> options = parse_redis_url("rediss://cache.example:6380/2");
  ASSERT_TRUE(options) << options.error().message;
  ASSERT_TRUE(options->tls);
  EXPECT_EQ(*options->tls, TlsOptions{});  // no CA file: system store; verification on
  EXPECT_FALSE(options->tls->insecure);
  EXPECT_EQ(options->host, "cache.example");
  EXPECT_EQ(options->port, 6380);
  EXPECT_EQ(options->db, 2);
}

TEST(TlsUrl, EveryParameterIsReadAndPercentDecoded) {
  Result<ClientOptions> options = parse_redis_url(
      "rediss://:pw@10.0.0.5:6380/1?tls_ca_file=/etc/ca%20dir/ca.pem&tls_cert_file=/c.pem"
      "&tls_key_file=/k.pem&tls_server_name=redis.internal&tls_insecure=true");
  ASSERT_TRUE(options) << options.error().message;
  ASSERT_TRUE(options->tls);
  EXPECT_EQ(options->tls->ca_file, "/etc/ca dir/ca.pem");
  EXPECT_EQ(options->tls->cert_file, "/c.pem");
  EXPECT_EQ(options->tls->key_file, "/k.pem");
  EXPECT_EQ(options->tls->server_name, "redis.internal");
  EXPECT_TRUE(options->tls->insecure);
  EXPECT_EQ(*options->password, "pw");
  EXPECT_EQ(options->db, 1);
}

TEST(TlsUrl, PlainUrlsHaveNoTlsAndRefuseTlsParameters) {
  Result<ClientOptions> plain = parse_redis_url("redis://h:1");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  Result<ClientOptions> mixed = parse_redis_url("redis://h:1?tls_ca_file=/ca.pem");
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().message.find("need rediss://"), std::string::npos)
      << mixed.error().message;
}

TEST(TlsUrl, BadParametersAreNamed) {
  for (const auto& [url, expected] : std::vector<std::pair<std::string, std::string>>{
           {"rediss://h:1?tls_ca=/x", "unknown parameter 'tls_ca'"},
           {"rediss://h:1?tls_insecure=yes", "tls_insecure must be true or false"},
           {"rediss://h:1?tls_ca_file=", "tls_ca_file is empty"},
           {"rediss://h:1?tls_ca_file=%zz", "bad percent escape in tls_ca_file"},
       }) {
    Result<ClientOptions> options = parse_redis_url(url);
    ASSERT_FALSE(options) << url;
    EXPECT_EQ(options.error().code, Errc::kInvalidArgument);
    EXPECT_NE(options.error().message.find(expected), std::string::npos)
        << url << ": " << options.error().message;
  }
}

TEST(TlsUrl, ClusterOverTlsSharesTheParametersWithEverySeed) {
  Result<ClusterUrl> url =
      parse_cluster_url("rediss+cluster://u:p@10.0.0.1:7000,10.0.0.2:7001?tls_ca_file=/ca.pem");
  ASSERT_TRUE(url) << url.error().message;
  ASSERT_EQ(url->seeds.size(), 2u);
  EXPECT_EQ(url->seeds[1].port, 7001);
  ASSERT_TRUE(url->node_options.tls);
  EXPECT_EQ(url->node_options.tls->ca_file, "/ca.pem");
  EXPECT_EQ(*url->node_options.user, "u");

  Result<ClusterUrl> plain = parse_cluster_url("redis+cluster://10.0.0.1:7000");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->node_options.tls);
  EXPECT_FALSE(parse_cluster_url("redis+cluster://10.0.0.1:7000?tls_ca_file=/ca.pem"));
}

TEST(SentinelUrl, SentinelsNameAndDb) {
  Result<SentinelUrl> url =
      parse_sentinel_url("redis+sentinel://user:secret@10.0.0.1:26380,sentinel-b,[::1]:5/cache/3");
  ASSERT_TRUE(url) << url.error().message;
  ASSERT_EQ(url->sentinels.size(), 3u);
  EXPECT_EQ(url->sentinels[0].host, "10.0.0.1");
  EXPECT_EQ(url->sentinels[0].port, 26380);
  EXPECT_EQ(url->sentinels[1].host, "sentinel-b");
  EXPECT_EQ(url->sentinels[1].port, 26379);  // Sentinel's default port
  EXPECT_EQ(url->sentinels[2].host, "::1");
  EXPECT_EQ(url->sentinels[2].port, 5);
  EXPECT_EQ(url->master_name, "cache");
  EXPECT_EQ(url->node_options.db, 3);
  EXPECT_EQ(*url->node_options.user, "user");
  EXPECT_EQ(*url->node_options.password, "secret");
}

TEST(SentinelUrl, ErrorsNameWhatIsWrong) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"redis+sentinel://h:26379", "primary's name is missing"},
           {"redis+sentinel://h:26379/", "primary's name is missing"},
           {"redis+sentinel://h:26379,,h2/x", "empty sentinel address"},
           {"redis+sentinel://h:99999/x", "out of range"},
           {"redis+sentinel://h/x/db", "db 'db' is not a number"},
           {"redis+sentinel://h/x?tls_ca_file=/a", "takes no query parameters"},
           {"redis://h/x", "must start with redis+sentinel://"},
       }) {
    Result<SentinelUrl> url = parse_sentinel_url(text);
    ASSERT_FALSE(url) << text;
    EXPECT_EQ(url.error().code, Errc::kInvalidArgument);
    EXPECT_NE(url.error().message.find(expected), std::string::npos)
        << text << ": " << url.error().message;
  }
}

}  // namespace
}  // namespace spillway::redis
