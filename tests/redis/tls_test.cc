// TLS to Redis with real processes: certificates made by openssl (tests/support/tls_certs.h),
// redis-server listening with TLS only. Checks work over TLS (plain and mutual); a wrong CA, a
// wrong host name, an expired certificate and a missing client certificate each fail with an
// error that says so; plain TCP to a TLS port (and TLS to a plain port) fails at once with a
// hint, never hangs; settings that cannot load are errors at open. A reservation made over
// mutual TLS is settled once, through another store on the same URL.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "spillway/open_store.h"
#include "spillway/redis_store.h"
#include "src/redis/storage_key.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/reservation_checks.h"
#include "tests/support/tls_certs.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;
using testing::tls_files;

const Limit kLimit = *Limit::make(Algorithm::kGcra, 3, 60 * kMicrosPerSecond);

std::string tls_url(std::uint16_t port, const std::string& query) {
  return "rediss://127.0.0.1:" + std::to_string(port) + "?" + query;
}

// The first check's result on a store opened with `url` (and `tls`), or the open error.
Result<Decision> first_check(const std::string& url,
                             std::optional<RedisTlsOptions> tls = std::nullopt) {
  auto store = RedisStore::open(
      {.url = url, .key_prefix = "tls", .timeout = 2000ms, .pool_size = 1, .tls = std::move(tls)});
  if (!store) return std::unexpected(store.error());
  return (*store)->check("k", kLimit);
}

void expect_failure(const Result<Decision>& result, const std::string& mention) {
  ASSERT_FALSE(result.has_value()) << "connected although it must not";
  EXPECT_EQ(result.error().code, Errc::kUnavailable) << result.error().message;
  EXPECT_NE(result.error().message.find(mention), std::string::npos)
      << "expected \"" << mention << "\" in: " << result.error().message;
}

TEST(Tls, ChecksAreExactOverTlsAndMutualTls) {
  for (const bool mutual : {false, true}) {
    RedisServer redis(RedisServer::Tls{.require_client_cert = mutual});
    auto store = RedisStore::open({.url = redis.url(), .key_prefix = "tls"});
    ASSERT_TRUE(store.has_value()) << store.error().message;
    int admitted = 0;
    for (int i = 0; i < 5; ++i) {
      Result<Decision> d = (*store)->check("user:1", kLimit);
      ASSERT_TRUE(d.has_value()) << d.error().message;
      admitted += d->allowed ? 1 : 0;
    }
    EXPECT_EQ(admitted, 3) << (mutual ? "mutual TLS" : "TLS");
    EXPECT_TRUE((*store)->ready());
    EXPECT_EQ(redis.cli("EXISTS " + (*store)->storage_key("user:1", kLimit)), "1\n");
  }
}

TEST(Tls, AWrongCaIsRefused) {
  RedisServer redis(RedisServer::Tls{});
  // OpenSSL's words depend on whether the server sends its CA along: either is a rejection of
  // the chain.
  Result<Decision> result =
      first_check(tls_url(redis.port(), "tls_ca_file=" + tls_files().other_ca_cert));
  expect_failure(result, "server certificate rejected: ");
  const std::string& message = result.error().message;
  EXPECT_TRUE(message.find("unable to get local issuer certificate") != std::string::npos ||
              message.find("self-signed certificate in certificate chain") != std::string::npos)
      << message;
}

TEST(Tls, TheCertificateMustNameTheHost) {
  RedisServer redis(RedisServer::Tls{.cert_file = tls_files().wrong_host_cert,
                                     .key_file = tls_files().wrong_host_key});
  const std::string ca = "tls_ca_file=" + tls_files().ca_cert;
  expect_failure(first_check(tls_url(redis.port(), ca)),
                 "server certificate rejected: IP address mismatch");
  expect_failure(first_check(tls_url(redis.port(), ca + "&tls_server_name=localhost")),
                 "server certificate rejected: hostname mismatch");
  // The name the certificate carries, given as the server name (SNI and check): accepted.
  Result<Decision> named =
      first_check(tls_url(redis.port(), ca + "&tls_server_name=wrong.example"));
  EXPECT_TRUE(named.has_value()) << named.error().message;
}

TEST(Tls, AnExpiredCertificateIsRefused) {
  RedisServer redis(
      RedisServer::Tls{.cert_file = tls_files().expired_cert, .key_file = tls_files().expired_key});
  expect_failure(first_check(tls_url(redis.port(), "tls_ca_file=" + tls_files().ca_cert)),
                 "server certificate rejected: certificate has expired");
  // The documented test-only switch turns verification off.
  Result<Decision> insecure = first_check(tls_url(redis.port(), "tls_insecure=true"));
  EXPECT_TRUE(insecure.has_value()) << insecure.error().message;
}

TEST(Tls, AMissingClientCertificateIsRefused) {
  RedisServer redis(RedisServer::Tls{.require_client_cert = true});
  Result<Decision> result =
      first_check(tls_url(redis.port(), "tls_ca_file=" + tls_files().ca_cert));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, Errc::kUnavailable);
  EXPECT_NE(result.error().message.find("certificate required"), std::string::npos)
      << result.error().message;
}

TEST(Tls, PlainTcpToATlsPortAndTlsToAPlainPortFailAtOnceWithAHint) {
  RedisServer tls_redis(RedisServer::Tls{});
  RedisServer plain;
  // Neither waits for the 2 s call timeout: the first is refused by the server, the second ends
  // with the 1 s connect timeout (a plain Redis waits for the end of a line that never comes).
  auto started = std::chrono::steady_clock::now();
  expect_failure(first_check("redis://127.0.0.1:" + std::to_string(tls_redis.port())),
                 "is this a TLS port? then use rediss://");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1900ms);
  started = std::chrono::steady_clock::now();
  expect_failure(first_check(tls_url(plain.port(), "tls_ca_file=" + tls_files().ca_cert)),
                 "is this a plain-TCP port? then use redis://");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1900ms);
}

TEST(Tls, SettingsThatCannotLoadAreErrorsAtOpen) {
  const auto open_error = [](const std::string& url,
                             std::optional<RedisTlsOptions> tls = std::nullopt) {
    auto store = RedisStore::open({.url = url, .tls = std::move(tls)});
    EXPECT_FALSE(store.has_value()) << url;
    return store ? std::string() : store.error().message;
  };
  EXPECT_NE(open_error("rediss://127.0.0.1:1?tls_ca_file=/no/such/ca.pem")
                .find("tls_ca_file '/no/such/ca.pem': cannot load CA certificates"),
            std::string::npos);
  EXPECT_NE(open_error("rediss://127.0.0.1:1?tls_cert_file=" + tls_files().client_cert +
                       "&tls_key_file=" + tls_files().server_key)
                .find("does not match tls_cert_file"),
            std::string::npos);
  EXPECT_NE(open_error("rediss://127.0.0.1:1?tls_cert_file=" + tls_files().client_cert)
                .find("tls_cert_file and tls_key_file go together"),
            std::string::npos);
  EXPECT_NE(open_error("redis://127.0.0.1:1", RedisTlsOptions{.ca_file = tls_files().ca_cert})
                .find("not rediss://"),
            std::string::npos);
}

TEST(Tls, ConfigSettingsFillTheUrlAndUrlParametersWin) {
  RedisServer redis(RedisServer::Tls{.require_client_cert = true});
  const std::string bare = "rediss://127.0.0.1:" + std::to_string(redis.port());
  const RedisTlsOptions config{.ca_file = tls_files().ca_cert,
                               .cert_file = tls_files().client_cert,
                               .key_file = tls_files().client_key};
  Result<Decision> from_config = first_check(bare, config);
  EXPECT_TRUE(from_config.has_value()) << from_config.error().message;
  // The URL's CA (the wrong one) wins over the config's.
  expect_failure(first_check(bare + "?tls_ca_file=" + tls_files().other_ca_cert, config),
                 "server certificate rejected");
}

TEST(Tls, AConcurrencySlotIsTakenAndReleasedOverTls) {
  RedisServer redis(RedisServer::Tls{.require_client_cert = true});
  std::unique_ptr<RedisStore> a = testing::open_ready_store(redis.url(), "tls-conc");
  std::unique_ptr<RedisStore> b = testing::open_ready_store(redis.url(), "tls-conc");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  testing::expect_one_slot_shared_and_released(*a, *b, "in_flight:k");
}

TEST(Tls, AReservationIsSettledOnceOverTls) {
  RedisServer redis(RedisServer::Tls{.require_client_cert = true});
  const std::string prefix = "tls-resv";
  std::unique_ptr<RedisStore> maker = testing::open_ready_store(redis.url(), prefix);
  std::unique_ptr<RedisStore> settler = testing::open_ready_store(redis.url(), prefix);
  ASSERT_TRUE(maker != nullptr && settler != nullptr);

  const std::string id = new_reservation_id();
  const Result<Decisions> reserved = testing::reserve_request_and_tokens(*maker, id);
  ASSERT_TRUE(reserved.has_value()) << reserved.error().message;
  ASSERT_EQ(reserved->size(), 2u);
  EXPECT_TRUE(all_allowed(*reserved));
  EXPECT_EQ((*reserved)[0].remaining, 9);
  EXPECT_EQ((*reserved)[1].remaining, 400);
  EXPECT_EQ(redis.cli("EXISTS '" + redis::reservation_home_key(prefix, id) + "'"), "1\n")
      << "no record of the reservation on the TLS server";

  // Committed below the estimate through the other store: 250 of the 600 tokens used.
  const Result<Settled> settled =
      settler->settle_and_wait({.id = id, .cost = 250, .now = testing::kReserveNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  testing::expect_committed_at_250(*settled);

  // Settled once: a second settlement through either store is a conflict and changes nothing.
  const Result<Settled> cancelled =
      maker->settle_and_wait({.id = id, .cancel = true, .now = testing::kReserveNow});
  ASSERT_FALSE(cancelled.has_value()) << "settled twice";
  EXPECT_EQ(cancelled.error().code, Errc::kConflict) << cancelled.error().message;
  const Result<Settled> again =
      settler->settle_and_wait({.id = id, .cost = 0, .now = testing::kReserveNow});
  ASSERT_FALSE(again.has_value()) << "settled twice";
  EXPECT_EQ(again.error().code, Errc::kConflict) << again.error().message;
  EXPECT_EQ(testing::left_at_reserve_time(*maker, "tpm", testing::kReserveTokens), 750);
}

TEST(Tls, ServeTakesBackendTlsFromTheConfig) {
  RedisServer redis(RedisServer::Tls{.require_client_cert = true});
  const std::string path = "/tmp/spillway_tls_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "backend:\n  url: rediss://127.0.0.1:" << redis.port()
                      << "\n  tls:\n    ca_file: " << tls_files().ca_cert
                      << "\n    cert_file: " << tls_files().client_cert
                      << "\n    key_file: " << tls_files().client_key << "\n";
  testing::ServeProcess serve({"--config", path},
                              "/tmp/spillway_tls_serve_" + std::to_string(::getpid()) + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::string body = R"({"key":"k","limit":2,"period":"1m"})";
  EXPECT_EQ(testing::http(serve.port(), "POST", "/v1/limit", body).status, 200);
  EXPECT_EQ(testing::http(serve.port(), "POST", "/v1/limit", body).status, 200);
  testing::HttpReply third = testing::http(serve.port(), "POST", "/v1/limit", body);
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.header("x-spillway-backend-error"), "");
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace spillway
