// redis::Client (src/redis/client.h) against a real redis-server started by RedisServer:
// commands and replies, binary safety, concurrency and pipelining, unix sockets, AUTH/ACL/SELECT,
// timeouts, server loss and recovery, shutdown. Also parse_redis_url.
#include "src/redis/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/redis/url.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway::redis {
namespace {

using namespace std::chrono_literals;
using spillway::testing::RedisServer;
using ClientSteady = std::chrono::steady_clock;

ClientOptions options_for(const RedisServer& server) {
  ClientOptions options;
  options.port = server.port();
  options.timeout = 2000ms;
  return options;
}

std::string describe(const Result<Reply>& result) {
  if (!result) {
    return "error " + std::string(errc_name(result.error().code)) + ": " + result.error().message;
  }
  return "reply type " + std::to_string(static_cast<int>(result->type)) + " text '" + result->text +
         "' integer " + std::to_string(result->integer);
}

// Polls `call` until it returns a reply (not an Error) or `limit` passes.
template <typename Call>
Result<Reply> eventually(Call call, std::chrono::milliseconds limit = 5000ms) {
  std::optional<Result<Reply>> result;
  testing::wait_until(
      [&] {
        result = call();
        return result->has_value();
      },
      limit);
  return *result;
}

TEST(RedisClient, PingSetGetIncr) {
  RedisServer server;
  Client client(options_for(server));

  Result<Reply> pong = client.call({"PING"});
  ASSERT_TRUE(pong) << describe(pong);
  EXPECT_EQ(pong->type, Reply::Type::kStatus);
  EXPECT_EQ(pong->text, "PONG");

  Result<Reply> set = client.call({"SET", "greeting", "hello"});
  ASSERT_TRUE(set) << describe(set);
  EXPECT_EQ(set->type, Reply::Type::kStatus);
  EXPECT_EQ(set->text, "OK");

  Result<Reply> get = client.call({"GET", "greeting"});
  ASSERT_TRUE(get) << describe(get);
  EXPECT_EQ(get->type, Reply::Type::kString);
  EXPECT_EQ(get->text, "hello");

  for (std::int64_t expected = 1; expected <= 3; ++expected) {
    Result<Reply> incr = client.call({"INCR", "counter"});
    ASSERT_TRUE(incr) << describe(incr);
    EXPECT_EQ(incr->type, Reply::Type::kInteger);
    EXPECT_EQ(incr->integer, expected);
  }
  EXPECT_TRUE(client.connected());
  EXPECT_EQ(server.cli("GET counter"), "3\n");
}

TEST(RedisClient, ArgumentsAreBinarySafe) {
  RedisServer server;
  Client client(options_for(server));

  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte.push_back(static_cast<char>(byte));
  const std::string key = std::string("key\r\nwith\0nul", 13) + every_byte;
  const std::string value = every_byte + "\r\n$3\r\n*1\r\n" + std::string(3, '\0') + every_byte;

  Result<Reply> set = client.call({"SET", key, value});
  ASSERT_TRUE(set) << describe(set);
  ASSERT_EQ(set->text, "OK");
  Result<Reply> get = client.call({"GET", key});
  ASSERT_TRUE(get) << describe(get);
  EXPECT_EQ(get->type, Reply::Type::kString);
  EXPECT_EQ(get->text, value);

  Result<Reply> strlen = client.call({"STRLEN", key});
  ASSERT_TRUE(strlen) << describe(strlen);
  EXPECT_EQ(strlen->integer, static_cast<std::int64_t>(value.size()));

  Result<Reply> empty_set = client.call({"SET", "empty", ""});
  ASSERT_TRUE(empty_set) << describe(empty_set);
  Result<Reply> empty = client.call({"GET", "empty"});
  ASSERT_TRUE(empty) << describe(empty);
  EXPECT_EQ(empty->type, Reply::Type::kString);
  EXPECT_EQ(empty->text, "");
}

TEST(RedisClient, DecodesEveryReplyType) {
  RedisServer server;
  Client client(options_for(server));

  Result<Reply> nil = client.call({"GET", "missing"});
  ASSERT_TRUE(nil) << describe(nil);
  EXPECT_EQ(nil->type, Reply::Type::kNil);

  Result<Reply> integer = client.call({"DEL", "missing"});
  ASSERT_TRUE(integer) << describe(integer);
  EXPECT_EQ(integer->type, Reply::Type::kInteger);
  EXPECT_EQ(integer->integer, 0);

  Result<Reply> negative = client.call({"DECRBY", "n", "9000000000"});
  ASSERT_TRUE(negative) << describe(negative);
  EXPECT_EQ(negative->integer, -9000000000LL);

  Result<Reply> empty_array = client.call({"LRANGE", "missing", "0", "-1"});
  ASSERT_TRUE(empty_array) << describe(empty_array);
  EXPECT_EQ(empty_array->type, Reply::Type::kArray);
  EXPECT_TRUE(empty_array->elements.empty());

  ASSERT_TRUE(client.call({"SET", "present", "yes"}));
  Result<Reply> mget = client.call({"MGET", "present", "missing"});
  ASSERT_TRUE(mget) << describe(mget);
  ASSERT_EQ(mget->type, Reply::Type::kArray);
  ASSERT_EQ(mget->elements.size(), 2u);
  EXPECT_EQ(mget->elements[0].type, Reply::Type::kString);
  EXPECT_EQ(mget->elements[0].text, "yes");
  EXPECT_EQ(mget->elements[1].type, Reply::Type::kNil);

  Result<Reply> nested = client.call(
      {"EVAL",
       "return {1, 'two', {3, 'four'}, redis.status_reply('FINE'), redis.error_reply('oops')}",
       "0"});
  ASSERT_TRUE(nested) << describe(nested);
  ASSERT_EQ(nested->type, Reply::Type::kArray);
  ASSERT_EQ(nested->elements.size(), 5u);
  EXPECT_EQ(nested->elements[0].type, Reply::Type::kInteger);
  EXPECT_EQ(nested->elements[0].integer, 1);
  EXPECT_EQ(nested->elements[1].type, Reply::Type::kString);
  EXPECT_EQ(nested->elements[1].text, "two");
  ASSERT_EQ(nested->elements[2].type, Reply::Type::kArray);
  ASSERT_EQ(nested->elements[2].elements.size(), 2u);
  EXPECT_EQ(nested->elements[2].elements[0].integer, 3);
  EXPECT_EQ(nested->elements[2].elements[1].text, "four");
  EXPECT_EQ(nested->elements[3].type, Reply::Type::kStatus);
  EXPECT_EQ(nested->elements[3].text, "FINE");
  EXPECT_EQ(nested->elements[4].type, Reply::Type::kError);
  EXPECT_TRUE(nested->elements[4].text.ends_with("oops")) << nested->elements[4].text;

  // Error replies are replies, not Errors; the connection keeps working after them.
  Result<Reply> unknown = client.call({"NOSUCHCOMMAND", "x"});
  ASSERT_TRUE(unknown) << describe(unknown);
  EXPECT_TRUE(unknown->is_error());
  EXPECT_TRUE(unknown->text.starts_with("ERR unknown command")) << unknown->text;

  Result<Reply> wrong_type = client.call({"LPUSH", "present", "x"});
  ASSERT_TRUE(wrong_type) << describe(wrong_type);
  EXPECT_TRUE(wrong_type->is_error());
  EXPECT_TRUE(wrong_type->text.starts_with("WRONGTYPE")) << wrong_type->text;

  Result<Reply> after = client.call({"ECHO", "still here"});
  ASSERT_TRUE(after) << describe(after);
  EXPECT_EQ(after->text, "still here");
}

TEST(RedisClient, EmptyCommandIsInvalidArgument) {
  RedisServer server;
  Client client(options_for(server));
  Result<Reply> result = client.call({});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::kInvalidArgument);
}

// 8 threads share one client. Each thread alternates INCR on its own key (its replies must be
// 1, 2, 3, ... in order: proof that it got its own replies) and INCR on a shared key (the union
// of all replies must be exactly 1..N: every call got a distinct reply and none was lost).
void hammer(int pool_size) {
  RedisServer server;
  ClientOptions options = options_for(server);
  options.pool_size = pool_size;
  options.timeout = 10s;  // generous: sanitizer builds are slow, and timing is not under test
  Client client(options);

  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 2000;
  std::vector<std::vector<std::int64_t>> shared_replies(kThreads);
  std::atomic<int> bad_own_replies{0};
  std::atomic<int> failed_calls{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const std::string own = "own:" + std::to_string(t);
        std::int64_t next_own = 1;
        for (int i = 0; i < kCallsPerThread; ++i) {
          const bool shared = i % 2 == 1;
          Result<Reply> reply = client.call({"INCR", shared ? "shared" : own});
          if (!reply || reply->type != Reply::Type::kInteger) {
            ++failed_calls;
            continue;
          }
          if (shared) {
            shared_replies[t].push_back(reply->integer);
          } else if (reply->integer != next_own++) {
            ++bad_own_replies;
          }
        }
      });
    }
  }
  EXPECT_EQ(failed_calls.load(), 0);
  EXPECT_EQ(bad_own_replies.load(), 0);

  std::vector<std::int64_t> all;
  for (const auto& replies : shared_replies) all.insert(all.end(), replies.begin(), replies.end());
  std::sort(all.begin(), all.end());
  const std::int64_t total = kThreads * kCallsPerThread / 2;
  ASSERT_EQ(all.size(), static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) ASSERT_EQ(all[i], i + 1) << "at " << i;

  Result<Reply> shared = client.call({"GET", "shared"});
  ASSERT_TRUE(shared) << describe(shared);
  EXPECT_EQ(shared->text, std::to_string(total));
  for (int t = 0; t < kThreads; ++t) {
    Result<Reply> own = client.call({"GET", "own:" + std::to_string(t)});
    ASSERT_TRUE(own) << describe(own);
    EXPECT_EQ(own->text, std::to_string(kCallsPerThread / 2));
  }
}

TEST(RedisClient, ManyThreadsOneConnection) { hammer(1); }

TEST(RedisClient, ManyThreadsTwoConnections) { hammer(2); }

TEST(RedisClient, ManyOutstandingAsyncCalls) {
  RedisServer server;
  ClientOptions options = options_for(server);
  options.pool_size = 2;
  options.timeout = 20s;
  constexpr int kCalls = 20000;
  std::vector<std::string> replies(kCalls);
  std::vector<std::atomic<int>> invocations(kCalls);
  std::atomic<bool> all_on_io_thread{true};
  const std::thread::id caller = std::this_thread::get_id();
  {
    Client client(options);
    std::latch done(kCalls);
    for (int i = 0; i < kCalls; ++i) {
      client.call_async({"ECHO", "message " + std::to_string(i)}, [&, i](Result<Reply> reply) {
        if (std::this_thread::get_id() == caller) all_on_io_thread = false;
        replies[i] = reply ? reply->text : "failed: " + reply.error().message;
        ++invocations[i];
        done.count_down();
      });
    }
    done.wait();
  }  // the client is gone: no callback can run any more
  int wrong = 0;
  for (int i = 0; i < kCalls; ++i) {
    if (replies[i] != "message " + std::to_string(i)) {
      if (++wrong < 5) ADD_FAILURE() << "call " << i << " got '" << replies[i] << "'";
    }
    EXPECT_EQ(invocations[i].load(), 1) << "call " << i;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_TRUE(all_on_io_thread.load());
}

TEST(RedisClient, BlockingCallOnIoThreadIsRejected) {
  RedisServer server;
  Client client(options_for(server));
  std::promise<Result<Reply>> nested;
  client.call_async({"PING"}, [&](Result<Reply>) { nested.set_value(client.call({"PING"})); });
  Result<Reply> result = nested.get_future().get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::kInternal);
}

TEST(RedisClient, UnixSocket) {
  RedisServer server;
  ClientOptions options;
  options.unix_socket = server.unix_socket();
  options.port = 1;  // ignored
  Client client(options);
  Result<Reply> set = client.call({"SET", "via", "unix"});
  ASSERT_TRUE(set) << describe(set);
  EXPECT_EQ(server.cli("GET via"), "unix\n");

  Result<ClientOptions> parsed = parse_redis_url("unix://" + server.unix_socket() + "?db=3");
  ASSERT_TRUE(parsed) << parsed.error().message;
  Client in_db3(*parsed);
  Result<Reply> set3 = in_db3.call({"SET", "via", "unix db 3"});
  ASSERT_TRUE(set3) << describe(set3);
  EXPECT_EQ(server.cli("-n 3 GET via"), "unix db 3\n");
}

TEST(RedisClient, ResolvesHostName) {
  RedisServer server;  // listens on 127.0.0.1 only: a ::1 answer for localhost must be skipped
  ClientOptions options = options_for(server);
  options.host = "localhost";
  Client client(options);
  Result<Reply> pong = client.call({"PING"});
  ASSERT_TRUE(pong) << describe(pong);
  EXPECT_EQ(pong->text, "PONG");
}

TEST(RedisClient, UnixSocketPathTooLong) {
  ClientOptions options;
  options.unix_socket = "/tmp/" + std::string(200, 'x');
  Client client(options);
  Result<Reply> result = client.call({"PING"});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::kUnavailable);
  EXPECT_NE(result.error().message.find("too long"), std::string::npos) << result.error().message;
}

TEST(RedisClient, AuthWithPassword) {
  RedisServer server("requirepass s3cret-pass");
  ClientOptions options = options_for(server);

  options.password = "s3cret-pass";
  Client good(options);
  Result<Reply> pong = good.call({"PING"});
  ASSERT_TRUE(pong) << describe(pong);
  EXPECT_EQ(pong->text, "PONG");

  options.password = "not-the-password";
  Client bad(options);
  for (int attempt = 0; attempt < 2; ++attempt) {  // queued during connect, then failing fast
    Result<Reply> denied = bad.call({"PING"});
    ASSERT_FALSE(denied) << describe(denied);
    EXPECT_EQ(denied.error().code, Errc::kUnavailable);
    EXPECT_NE(denied.error().message.find("AUTH failed"), std::string::npos)
        << denied.error().message;
    EXPECT_EQ(denied.error().message.find("not-the-password"), std::string::npos)
        << denied.error().message;
  }
  EXPECT_FALSE(bad.connected());

  options.password.reset();
  Client anonymous(options);
  Result<Reply> noauth = anonymous.call({"PING"});
  ASSERT_TRUE(noauth) << describe(noauth);
  EXPECT_TRUE(noauth->is_error());
  EXPECT_TRUE(noauth->text.starts_with("NOAUTH")) << noauth->text;
}

TEST(RedisClient, AclUserFromUrl) {
  RedisServer server("user alice on >pw ~* +@all");
  Result<ClientOptions> options =
      parse_redis_url("redis://alice:pw@127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(options) << options.error().message;
  Client alice(*options);
  Result<Reply> whoami = alice.call({"ACL", "WHOAMI"});
  ASSERT_TRUE(whoami) << describe(whoami);
  EXPECT_EQ(whoami->text, "alice");

  options->password = "wrong";
  Client impostor(*options);
  Result<Reply> denied = impostor.call({"ACL", "WHOAMI"});
  ASSERT_FALSE(denied) << describe(denied);
  EXPECT_EQ(denied.error().code, Errc::kUnavailable);
  EXPECT_NE(denied.error().message.find("AUTH failed"), std::string::npos);
}

TEST(RedisClient, SelectDbFromUrl) {
  RedisServer server;
  Result<ClientOptions> options = parse_redis_url(server.url() + "/2");
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->db, 2);
  Client client(*options);
  Result<Reply> set = client.call({"SET", "where", "db2"});
  ASSERT_TRUE(set) << describe(set);
  EXPECT_EQ(server.cli("-n 2 GET where"), "db2\n");
  EXPECT_EQ(server.cli("-n 0 EXISTS where"), "0\n");

  Result<ClientOptions> out_of_range = parse_redis_url(server.url() + "/99");
  ASSERT_TRUE(out_of_range);
  Client bad(*out_of_range);
  Result<Reply> denied = bad.call({"PING"});
  ASSERT_FALSE(denied) << describe(denied);
  EXPECT_EQ(denied.error().code, Errc::kUnavailable);
  EXPECT_NE(denied.error().message.find("SELECT 99 failed"), std::string::npos)
      << denied.error().message;
}

// A paused server: the call times out long before the pause ends; the late reply is dropped and
// later calls still get their own replies.
TEST(RedisClient, TimeoutWhileServerIsPaused) {
  RedisServer server;
  ClientOptions options = options_for(server);
  options.timeout = 200ms;
  Client client(options);
  ASSERT_TRUE(client.call({"SET", "k", "late value"}));

  ASSERT_EQ(server.cli("CLIENT PAUSE 3000"), "OK\n");
  const auto paused_at = ClientSteady::now();  // at the latest (redis-cli takes a while to run)
  Result<Reply> late = client.call({"GET", "k"});
  const auto returned_at = ClientSteady::now();
  ASSERT_FALSE(late) << describe(late);
  EXPECT_EQ(late.error().code, Errc::kTimeout) << late.error().message;
  EXPECT_LT(returned_at - paused_at, 2000ms);
  EXPECT_TRUE(client.connected());  // a timeout does not drop the connection

  Result<Reply> echo = eventually([&] { return client.call({"ECHO", "fresh"}); });
  ASSERT_TRUE(echo) << describe(echo);
  EXPECT_EQ(echo->text, "fresh");
  Result<Reply> get = client.call({"GET", "k"});
  ASSERT_TRUE(get) << describe(get);
  EXPECT_EQ(get->text, "late value");
}

TEST(RedisClient, ServerKilledThenRestarted) {
  RedisServer server;
  ClientOptions options = options_for(server);
  options.pool_size = 2;
  options.reconnect_min = 10ms;
  options.reconnect_max = 100ms;
  Client client(options);
  ASSERT_TRUE(client.call({"SET", "k", "v"}));

  server.stop();
  const std::string where = "127.0.0.1:" + std::to_string(server.port());
  for (int i = 0; i < 5; ++i) {
    Result<Reply> down = client.call({"PING"});
    ASSERT_FALSE(down) << describe(down);
    EXPECT_EQ(down.error().code, Errc::kUnavailable) << down.error().message;
    EXPECT_NE(down.error().message.find(where), std::string::npos) << down.error().message;
  }
  testing::wait_until([&] { return !client.connected(); });
  EXPECT_FALSE(client.connected());

  server.start();
  Result<Reply> pong = eventually([&] { return client.call({"PING"}); });
  ASSERT_TRUE(pong) << describe(pong);
  EXPECT_EQ(pong->text, "PONG");
  EXPECT_TRUE(client.connected());
  for (int i = 0; i < 20; ++i) {  // a connection still reconnecting is skipped, not failed
    Result<Reply> incr = client.call({"INCR", "after restart"});
    ASSERT_TRUE(incr) << describe(incr);
    EXPECT_EQ(incr->integer, i + 1);
  }
}

TEST(RedisClient, NoServerFailsFast) {
  RedisServer server;
  server.stop();  // nothing listens on its port now
  ClientOptions options = options_for(server);
  options.timeout = 5s;
  Client client(options);
  const auto start = ClientSteady::now();
  Result<Reply> result = client.call({"PING"});
  ASSERT_FALSE(result) << describe(result);
  EXPECT_EQ(result.error().code, Errc::kUnavailable) << result.error().message;
  EXPECT_LT(ClientSteady::now() - start, 4s);
  EXPECT_NE(result.error().message.find("127.0.0.1:" + std::to_string(server.port())),
            std::string::npos)
      << result.error().message;
  EXPECT_FALSE(client.connected());
}

TEST(RedisClient, DestructorFailsPendingCalls) {
  RedisServer server;
  ClientOptions options = options_for(server);
  options.timeout = 20s;
  constexpr int kCalls = 100;
  std::atomic<int> unavailable{0};
  std::atomic<int> other{0};
  {
    Client client(options);
    ASSERT_TRUE(client.call({"PING"}));
    ASSERT_EQ(server.cli("CLIENT PAUSE 5000"), "OK\n");  // longer than the test
    for (int i = 0; i < kCalls; ++i) {
      client.call_async({"PING"}, [&](Result<Reply> result) {
        if (!result && result.error().code == Errc::kUnavailable) {
          ++unavailable;
        } else {
          ++other;
        }
      });
    }
  }
  EXPECT_EQ(unavailable.load(), kCalls);
  EXPECT_EQ(other.load(), 0);
}

// ---- parse_redis_url -----------------------------------------------------------------------

TEST(ParseRedisUrl, HostOnlyUsesDefaults) {
  Result<ClientOptions> options = parse_redis_url("redis://cache.internal");
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->host, "cache.internal");
  EXPECT_EQ(options->port, 6379);
  EXPECT_EQ(options->db, 0);
  EXPECT_FALSE(options->user);
  EXPECT_FALSE(options->password);
  EXPECT_TRUE(options->unix_socket.empty());
}

TEST(ParseRedisUrl, PortAndDb) {
  Result<ClientOptions> options = parse_redis_url("redis://127.0.0.1:6380/3");
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->host, "127.0.0.1");
  EXPECT_EQ(options->port, 6380);
  EXPECT_EQ(options->db, 3);

  Result<ClientOptions> trailing_slash = parse_redis_url("redis://h:1/");
  ASSERT_TRUE(trailing_slash) << trailing_slash.error().message;
  EXPECT_EQ(trailing_slash->db, 0);
  EXPECT_EQ(trailing_slash->port, 1);
}

TEST(ParseRedisUrl, PasswordOnly) {
  Result<ClientOptions> options = parse_redis_url("redis://:secret@redis.example:7000");
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_FALSE(options->user);
  ASSERT_TRUE(options->password);
  EXPECT_EQ(*options->password, "secret");
  EXPECT_EQ(options->host, "redis.example");
  EXPECT_EQ(options->port, 7000);
}

TEST(ParseRedisUrl, UserAndPasswordArePercentDecoded) {
  Result<ClientOptions> options = parse_redis_url("redis://alice:p%40ss%3Aw0rd@h:1/0");
  ASSERT_TRUE(options) << options.error().message;
  ASSERT_TRUE(options->user);
  EXPECT_EQ(*options->user, "alice");
  ASSERT_TRUE(options->password);
  EXPECT_EQ(*options->password, "p@ss:w0rd");
}

TEST(ParseRedisUrl, Ipv6Host) {
  Result<ClientOptions> options = parse_redis_url("redis://[::1]:7001/1");
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->host, "::1");
  EXPECT_EQ(options->port, 7001);
  EXPECT_EQ(options->db, 1);
}

TEST(ParseRedisUrl, UnixSocket) {
  Result<ClientOptions> plain = parse_redis_url("unix:///run/redis/redis.sock");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->unix_socket, "/run/redis/redis.sock");
  EXPECT_EQ(plain->db, 0);

  Result<ClientOptions> with_db = parse_redis_url("unix:///tmp/r.sock?db=5");
  ASSERT_TRUE(with_db) << with_db.error().message;
  EXPECT_EQ(with_db->unix_socket, "/tmp/r.sock");
  EXPECT_EQ(with_db->db, 5);
}

void expect_rejected(std::string_view url, std::string_view mention) {
  Result<ClientOptions> options = parse_redis_url(url);
  ASSERT_FALSE(options) << url << " was accepted";
  EXPECT_EQ(options.error().code, Errc::kInvalidArgument) << url;
  EXPECT_NE(options.error().message.find(mention), std::string::npos)
      << url << " -> " << options.error().message;
}

TEST(ParseRedisUrl, RejectsBadPort) {
  expect_rejected("redis://h:abc", "port 'abc' is not a number");
  expect_rejected("redis://h:", "port '' is not a number");
  expect_rejected("redis://h:-1", "not a number");
  expect_rejected("redis://h:70000", "out of range");
  expect_rejected("redis://h:0", "out of range");
  expect_rejected("redis://h:99999999999999999999999", "out of range");
}

TEST(ParseRedisUrl, RejectsBadDb) {
  expect_rejected("redis://h:6379/x", "db 'x' is not a number");
  expect_rejected("redis://h:6379/-1", "db");
  expect_rejected("unix:///tmp/s?db=two", "db 'two' is not a number");
}

TEST(ParseRedisUrl, RejectsEmptyHostAndBadScheme) {
  expect_rejected("redis://:6379", "empty host");
  expect_rejected("redis://", "empty host");
  expect_rejected("redis://:pw@/0", "empty host");
  expect_rejected("http://h:6379", "unknown scheme 'http'");
  expect_rejected("rediss+h://h:6379", "unknown scheme 'rediss+h'");
  expect_rejected("localhost:6379", "scheme");
  expect_rejected("unix://relative/path", "absolute");
  expect_rejected("unix:///tmp/s?timeout=1", "unknown parameter 'timeout'");
}

TEST(ParseRedisUrl, ErrorsDoNotLeakThePassword) {
  Result<ClientOptions> options = parse_redis_url("redis://:topsecret@h:notaport");
  ASSERT_FALSE(options);
  EXPECT_EQ(options.error().message.find("topsecret"), std::string::npos)
      << options.error().message;
}

}  // namespace
}  // namespace spillway::redis

namespace spillway::redis {
namespace {

// A listener on loopback that accepts every connection and closes it at once (a server that
// drops its clients), counting them, for `duration`.
int count_dropped_connections(std::uint16_t port, int listen_fd,
                              std::chrono::milliseconds duration) {
  (void)port;
  int accepted = 0;
  const auto end = ClientSteady::now() + duration;
  while (ClientSteady::now() < end) {
    pollfd ready{listen_fd, POLLIN, 0};
    if (::poll(&ready, 1, 10) <= 0) continue;
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd >= 0) {
      ++accepted;
      ::close(fd);
    }
  }
  return accepted;
}

TEST(RedisClient, ReconnectsAreCappedPerSecondWhenTheServerDropsEveryConnection) {
  // Backoff 1-2 ms and 8 connections: uncapped, that is hundreds of attempts a second.
  for (const int cap : {10, 1000}) {
    std::uint16_t port = 0;
    const int listener = testing::listen_on_loopback(port);
    int accepted = 0;
    {
      Client client({.port = port,
                     .pool_size = 8,
                     .reconnect_min = 1ms,
                     .reconnect_max = 2ms,
                     .max_connects_per_second = cap});
      accepted = count_dropped_connections(port, listener, 1000ms);
    }
    ::close(listener);
    std::printf("cap %d per second: %d connection attempts in 1 s\n", cap, accepted);
    if (cap == 10) {
      // A burst of 10, then 10 a second: about 20 in one second.
      EXPECT_LE(accepted, 25) << "the connection attempts were not capped";
      EXPECT_GE(accepted, 10);
    } else {
      EXPECT_GT(accepted, 100) << "without a low cap the harness sees the storm";
    }
  }
}

}  // namespace
}  // namespace spillway::redis
