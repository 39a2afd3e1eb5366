// HttpServer (src/server/http_server.h): a real server on a loopback port, spoken to through raw
// sockets so every test controls the exact bytes: keep-alive, pipelining, limits, timeouts, the
// connection cap, late and lost answers, drain on stop, errors of start(), the access log.
#include "src/server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "spillway/runtime.h"
#include "tests/support/poll.h"

namespace spillway::server {
namespace {

using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- a raw HTTP client -----------------------------------------------------------------------

struct RawReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  std::string header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return value;
    }
    return "";
  }
  bool has_header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return true;
    }
    return false;
  }
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

class RawClient {
 public:
  explicit RawClient(std::uint16_t port, const std::string& address = "127.0.0.1") {
    sockaddr_storage storage{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(port);
      length = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(port);
      length = sizeof(sockaddr_in6);
    } else {
      return;
    }
    fd_ = ::socket(storage.ss_family, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // One response (a 100 Continue counts as one); nullopt when the connection closed or the time
  // ran out first. `head`: the response to a HEAD request has no body whatever its length says.
  std::optional<RawReply> read_response(milliseconds timeout = 5000ms, bool head = false) {
    const auto deadline = SteadyTime::now() + timeout;
    std::size_t end = std::string::npos;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (receive(deadline) <= 0) return std::nullopt;
    }
    RawReply reply;
    std::string_view header(buffer_.data(), end + 2);
    const std::size_t line_end = header.find("\r\n");
    const std::string_view status_line = header.substr(0, line_end);
    if (status_line.size() < 12 || status_line.substr(0, 9) != "HTTP/1.1 ") return std::nullopt;
    reply.status = std::stoi(std::string(status_line.substr(9, 3)));
    header.remove_prefix(line_end + 2);
    while (!header.empty()) {
      const std::size_t eol = header.find("\r\n");
      const std::string_view line = header.substr(0, eol);
      const std::size_t colon = line.find(':');
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      reply.headers.emplace_back(lower(std::string(line.substr(0, colon))), std::string(value));
      header.remove_prefix(eol + 2);
    }
    buffer_.erase(0, end + 4);
    std::size_t length = 0;
    if (reply.has_header("content-length") && !head) {
      length = std::stoul(reply.header("content-length"));
    }
    while (buffer_.size() < length) {
      if (receive(deadline) <= 0) return std::nullopt;
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return reply;
  }

  // True when the server closes the connection (end of stream or reset) within `timeout`; bytes
  // that arrive meanwhile are kept.
  bool closed_within(milliseconds timeout) {
    const auto deadline = SteadyTime::now() + timeout;
    for (;;) {
      const int got = receive(deadline);
      if (got == 0 || got == -1) return true;
      if (got == -2) return false;
    }
  }

  const std::string& unread() const { return buffer_; }

 private:
  // >0: bytes appended; 0: end of stream; -1: error (reset); -2: timeout.
  int receive(SteadyTime::time_point deadline) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyTime::now());
    if (left.count() <= 0) return -2;
    pollfd item{fd_, POLLIN, 0};
    const int ready = ::poll(&item, 1, static_cast<int>(left.count()));
    if (ready == 0) return -2;
    if (ready < 0) return -1;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0) return -1;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return static_cast<int>(n);
  }

  int fd_ = -1;
  std::string buffer_;
};

std::string get(const std::string& target, const std::string& extra = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

std::string post(const std::string& target, const std::string& body,
                 const std::string& extra = "") {
  return "POST " + target +
         " HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra + "\r\n" + body;
}

// ---- handlers and helpers --------------------------------------------------------------------

// Answers with what it saw: method, target, header names, body, peer.
void echo(HttpRequest request, Responder respond) {
  HttpResponse response;
  response.content_type = "text/plain";
  std::string names;
  for (const auto& [name, value] : request.headers) names += name + ",";
  const std::string* custom = request.header("x-custom");
  response.body = "method=" + request.method + "\ntarget=" + request.target + "\nheaders=" + names +
                  "\ncustom=" + (custom ? *custom : "") + "\npeer=" + request.peer_address +
                  "\nbody=" + request.body;
  respond(std::move(response));
}

// Runs functions after a delay on the process runtime's thread (not the server's); the destructor
// waits for those still due (up to 60 s), so none outlives what it uses.
class Later {
 public:
  ~Later() {
    std::unique_lock lock(mutex_);
    done_.wait_for(lock, std::chrono::seconds(60), [this] { return due_ == 0; });
    lock.unlock();
    tasks_.clear();
  }
  void run(milliseconds delay, std::function<void()> task) {
    const std::lock_guard lock(mutex_);
    ++due_;
    tasks_.push_back(system_runtime()->after(std::chrono::microseconds(delay).count(),
                                             [this, task = std::move(task)] {
                                               task();
                                               const std::lock_guard ran(mutex_);
                                               --due_;
                                               done_.notify_all();
                                             }));
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int due_ = 0;
  std::vector<ScheduledTask> tasks_;
};

// "2026-12-02T01:02:03.456Z": the length of an access log line's RFC 3339 timestamp.
constexpr std::size_t kTimestampLength = 24;

// The time that `line` starts with ("2026-12-02T01:02:03.456Z " exactly: UTC, milliseconds, a
// space after), as ms since 1970; nullopt when it starts otherwise.
std::optional<std::int64_t> timestamp_of(std::string_view line) {
  if (line.size() <= kTimestampLength || line[kTimestampLength] != ' ') return std::nullopt;
  const std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  for (std::size_t i = 0; i < kTimestampLength; ++i) {
    const bool digit = line[i] >= '0' && line[i] <= '9';
    if (shape[i] == 'd' ? !digit : line[i] != shape[i]) return std::nullopt;
  }
  const auto number = [&](std::size_t at, std::size_t length) {
    return std::stoi(std::string(line.substr(at, length)));
  };
  std::tm utc{};
  utc.tm_year = number(0, 4) - 1900;
  utc.tm_mon = number(5, 2) - 1;
  utc.tm_mday = number(8, 2);
  utc.tm_hour = number(11, 2);
  utc.tm_min = number(14, 2);
  utc.tm_sec = number(17, 2);
  if (utc.tm_mon > 11 || utc.tm_mday < 1 || utc.tm_mday > 31 || utc.tm_hour > 23 ||
      utc.tm_min > 59 || utc.tm_sec > 60) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(timegm(&utc)) * 1000 + number(20, 3);
}

// Collects access log lines.
class LogCapture {
 public:
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view line) {
      const std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    };
  }
  std::vector<std::string> lines() {
    const std::lock_guard lock(mutex_);
    return lines_;
  }
  // Waits for the line `<timestamp> <before> us=<digits> <after>` (written after the response
  // went out).
  bool wait_for(const std::string& before, const std::string& after,
                milliseconds timeout = 2000ms) {
    return testing::wait_until(
        [&] {
          const std::vector<std::string> now = lines();
          return std::any_of(now.begin(), now.end(),
                             [&](const std::string& line) { return matches(line, before, after); });
        },
        timeout);
  }

 private:
  static bool matches(std::string_view line, const std::string& before, const std::string& after) {
    if (!timestamp_of(line)) return false;
    line.remove_prefix(kTimestampLength + 1);
    const std::string head = before + " us=";
    if (line.substr(0, head.size()) != head) return false;
    line.remove_prefix(head.size());
    std::size_t digits = 0;
    while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
    return digits > 0 && line.substr(digits) == " " + after;
  }

  std::mutex mutex_;
  std::vector<std::string> lines_;
};

HttpServerOptions test_options(LogCapture* log = nullptr) {
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.threads = 2;
  options.access_log = log ? log->sink() : [](std::string_view) {};
  return options;
}

std::unique_ptr<HttpServer> start(HttpServerOptions options, Handler handler = echo) {
  auto started = HttpServer::start(std::move(options), std::move(handler));
  EXPECT_TRUE(started.has_value()) << (started ? "" : started.error().message);
  return started ? std::move(*started) : nullptr;
}

// Waits up to 2 s for `condition` (tests/support/poll.h).
bool eventually(const std::function<bool()>& condition) {
  return testing::wait_until(condition, 2000ms);
}

// ---- keep-alive, ordering, versions ----------------------------------------------------------

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 3; ++i) {
    const std::string body = "{\"n\":" + std::to_string(i) + "}";
    ASSERT_TRUE(client.send(post("/v1/check?i=" + std::to_string(i), body,
                                 "X-Custom: Value " + std::to_string(i) + "\r\n")));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply) << "request " << i;
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->header("content-type"), "text/plain");
    EXPECT_EQ(reply->header("content-length"), std::to_string(reply->body.size()));
    EXPECT_FALSE(reply->has_header("connection"));
    EXPECT_EQ(reply->body, "method=POST\ntarget=/v1/check?i=" + std::to_string(i) +
                               "\nheaders=host,content-length,x-custom,\ncustom=Value " +
                               std::to_string(i) + "\npeer=127.0.0.1\nbody=" + body);
  }
  EXPECT_EQ(server->open_connections(), 1u);
  client.close();
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/bye", "Connection: close\r\n")));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->header("connection"), "close");
  EXPECT_TRUE(client.closed_within(2000ms));
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  Later later;
  auto server = start(test_options(), [&later](HttpRequest request, Responder respond) {
    HttpResponse response;
    response.body = request.target;
    if (request.target == "/slow") {
      later.run(50ms, [respond, response] { respond(response); });
    } else {
      respond(std::move(response));
    }
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/slow") + post("/a", "xyz") + get("/slow") + get("/b")));
  for (const char* expected : {"/slow", "/a", "/slow", "/b"}) {
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->body, expected);
  }
}

TEST(HttpServer, Http10ClosesUnlessKeepAliveIsAsked) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  {
    RawClient client(server->port());
    ASSERT_TRUE(client.send("GET /old HTTP/1.0\r\n\r\n"));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->header("connection"), "close");
    EXPECT_TRUE(client.closed_within(2000ms));
  }
  RawClient client(server->port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header("connection"), "keep-alive");
  }
}

TEST(HttpServer, HeadIsPassedThroughWithoutABody) {
  auto server = start(test_options(), [](HttpRequest request, Responder respond) {
    HttpResponse response;
    response.body = request.method == "HEAD" ? "hello" : "world!";
    respond(std::move(response));
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send("HEAD /x HTTP/1.1\r\nHost: t\r\n\r\n"));
  const auto head = client.read_response(5000ms, /*head=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->header("content-length"), "5");
  ASSERT_TRUE(client.send(get("/x")));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->body, "world!");  // nothing of the HEAD body was sent in between
}

TEST(HttpServer, ExpectContinueIsAnswered) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(
      "POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  const auto interim = client.read_response();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.send("hello"));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_NE(reply->body.find("body=hello"), std::string::npos);
}

TEST(HttpServer, ResponseHeadersAreWrittenSafely) {
  auto server = start(test_options(), [](HttpRequest request, Responder respond) {
    HttpResponse response;
    if (request.target == "/empty") {
      response.status = 204;
      respond(std::move(response));
      return;
    }
    response.status = 429;
    response.body = "{}";
    response.headers = {{"Retry-After", "3"},
                        {"X-Evil", "a\r\nSet-Cookie: x=1"},
                        {"Content-Length", "999"},
                        {"Bad Name", "v"}};
    respond(std::move(response));
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/limited")));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 429);
  EXPECT_EQ(reply->header("retry-after"), "3");
  EXPECT_EQ(reply->header("content-length"), "2");
  EXPECT_EQ(reply->header("content-type"), "application/json");
  EXPECT_FALSE(reply->has_header("x-evil"));
  EXPECT_FALSE(reply->has_header("set-cookie"));
  EXPECT_EQ(reply->headers.size(), 3u);
  EXPECT_EQ(reply->body, "{}");
  ASSERT_TRUE(client.send(get("/empty")));
  const auto empty = client.read_response();
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 204);
  EXPECT_FALSE(empty->has_header("content-length"));
  ASSERT_TRUE(client.send(get("/limited")));  // the connection is still in step
  const auto again = client.read_response();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 429);
}

// ---- limits and malformed requests -----------------------------------------------------------

TEST(HttpServer, BodyOverTheLimitGets413WithoutCallingTheHandler) {
  std::atomic<int> calls{0};
  auto options = test_options();
  options.max_body_bytes = 1024;
  auto server = start(options, [&calls](HttpRequest request, Responder respond) {
    ++calls;
    echo(std::move(request), std::move(respond));
  });
  ASSERT_TRUE(server);
  {
    RawClient client(server->port());
    ASSERT_TRUE(client.send(post("/big", std::string(2000, 'x'))));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 413);
    EXPECT_EQ(reply->body, "{\"error\":\"request body is larger than 1024 bytes\"}");
    EXPECT_EQ(reply->header("connection"), "close");
    EXPECT_TRUE(client.closed_within(2000ms));
  }
  {
    RawClient client(server->port());  // chunked: found out while reading the body
    const std::string chunk = "258\r\n" + std::string(600, 'y') + "\r\n";
    ASSERT_TRUE(client.send("POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            chunk + chunk + "0\r\n\r\n"));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 413);
    EXPECT_TRUE(client.closed_within(2000ms));
  }
  {
    RawClient client(server->port());  // exactly at the limit is fine
    ASSERT_TRUE(client.send(post("/ok", std::string(1024, 'z'))));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServer, DefaultBodyLimitMessage) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n"));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 413);
  EXPECT_EQ(reply->body, "{\"error\":\"request body is larger than 65536 bytes\"}");
}

TEST(HttpServer, HugeHeaderGets431) {
  auto options = test_options();
  options.max_header_bytes = 1024;
  auto server = start(options);
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/", "X-Huge: " + std::string(4000, 'h') + "\r\n")));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 431);
  EXPECT_EQ(reply->header("connection"), "close");
  EXPECT_TRUE(client.closed_within(2000ms));
}

TEST(HttpServer, GarbageGets400AndOthersAreStillServed) {
  auto server = start(test_options());
  ASSERT_TRUE(server);
  RawClient bad(server->port());
  ASSERT_TRUE(bad.send(std::string("\x01\x02 garbage \"here\"\r\n\r\n")));
  const auto reply = bad.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 400);
  EXPECT_EQ(reply->body.rfind("{\"error\":\"", 0), 0u) << reply->body;
  EXPECT_EQ(reply->body.back(), '}');
  EXPECT_TRUE(bad.closed_within(2000ms));

  RawClient good(server->port());
  ASSERT_TRUE(good.send(get("/fine")));
  const auto fine = good.read_response();
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200);
}

// ---- timeouts and the connection cap ---------------------------------------------------------

TEST(HttpServer, TruncatedRequestIsClosedAfterTheReadTimeout) {
  std::atomic<int> calls{0};
  auto options = test_options();
  options.read_timeout = 200ms;
  options.idle_timeout = 10000ms;
  auto server = start(options, [&calls](HttpRequest request, Responder respond) {
    ++calls;
    echo(std::move(request), std::move(respond));
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  const auto begin = SteadyTime::now();
  ASSERT_TRUE(client.send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_TRUE(client.closed_within(3000ms));
  const auto took = SteadyTime::now() - begin;
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 2000ms);
  EXPECT_EQ(client.unread(), "");  // closed without an answer

  // A client trickling bytes does not reset the deadline.
  RawClient trickle(server->port());
  const auto start_trickle = SteadyTime::now();
  bool closed = false;
  for (const char c : std::string("GET /trickle HTTP/1.1\r\nHost: somewhere.example\r\n")) {
    if (!trickle.send(std::string(1, c)) || trickle.closed_within(20ms)) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed || trickle.closed_within(2000ms));
  EXPECT_LT(SteadyTime::now() - start_trickle, 1500ms);
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServer, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  auto options = test_options();
  options.read_timeout = 5000ms;
  options.idle_timeout = 200ms;
  auto server = start(options);
  ASSERT_TRUE(server);
  RawClient client(server->port());
  const auto begin = SteadyTime::now();  // before the server's idle clock starts
  ASSERT_TRUE(client.send(get("/once")));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(client.closed_within(3000ms));
  const auto took = SteadyTime::now() - begin;
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 2000ms);
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, ConnectionsOverTheCapAreTurnedAway) {
  auto options = test_options();
  options.max_connections = 2;
  auto server = start(options);
  ASSERT_TRUE(server);
  auto first = std::make_unique<RawClient>(server->port());
  RawClient second(server->port());
  for (RawClient* client : {first.get(), &second}) {
    ASSERT_TRUE(client->send(get("/in")));
    const auto reply = client->read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
  }
  EXPECT_EQ(server->open_connections(), 2u);

  RawClient third(server->port());
  ASSERT_TRUE(third.connected());
  const auto rejected = third.read_response();
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 503);
  EXPECT_EQ(rejected->header("connection"), "close");
  EXPECT_TRUE(third.closed_within(2000ms));
  EXPECT_EQ(server->open_connections(), 2u);

  first.reset();
  ASSERT_TRUE(eventually([&] { return server->open_connections() == 1; }));
  RawClient fourth(server->port());
  ASSERT_TRUE(fourth.send(get("/in")));
  const auto admitted = fourth.read_response();
  ASSERT_TRUE(admitted);
  EXPECT_EQ(admitted->status, 200);
}

// ---- answers from elsewhere, late or never ---------------------------------------------------

TEST(HttpServer, ResponderWorksFromAnotherThreadLater) {
  Later later;
  auto server = start(test_options(), [&later](HttpRequest request, Responder respond) {
    later.run(30ms, [request = std::move(request), respond = std::move(respond)] {
      HttpResponse response;
      response.body = "late " + request.target;
      response.headers.emplace_back("X-Later", "yes");
      respond(std::move(response));
    });
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.send(get("/t" + std::to_string(i))));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->body, "late /t" + std::to_string(i));
    EXPECT_EQ(reply->header("x-later"), "yes");
  }
}

TEST(HttpServer, OnlyTheFirstAnswerCounts) {
  auto server = start(test_options(), [](HttpRequest request, Responder respond) {
    HttpResponse first;
    first.body = "first " + request.target;
    respond(first);
    HttpResponse second;
    second.body = "second";
    respond(second);
    Responder copy = respond;
    copy(second);
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/1") + get("/2")));
  for (const char* expected : {"first /1", "first /2"}) {
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->body, expected);
  }
  EXPECT_FALSE(client.closed_within(100ms));
  EXPECT_EQ(client.unread(), "");
}

TEST(HttpServer, LostResponderAndThrowingHandlerAnswer500) {
  auto server = start(test_options(), [](HttpRequest request, Responder) {
    if (request.target == "/throw") throw std::runtime_error("boom");
    // else: the Responder is dropped without an answer
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/drop")));
  const auto dropped = client.read_response();
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->status, 500);
  ASSERT_TRUE(client.send(get("/throw")));
  const auto thrown = client.read_response();
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->status, 500);
  EXPECT_EQ(thrown->body, "{\"error\":\"the request handler failed: boom\"}");
}

TEST(HttpServer, AnswerAfterTheConnectionOrServerIsGoneIsDropped) {
  std::mutex mutex;
  std::vector<Responder> kept;
  std::promise<void> first_called;
  auto server = start(test_options(), [&](HttpRequest, Responder respond) {
    const std::lock_guard lock(mutex);
    kept.push_back(std::move(respond));
    if (kept.size() == 1) first_called.set_value();
  });
  ASSERT_TRUE(server);
  {
    RawClient client(server->port());
    ASSERT_TRUE(client.send(get("/gone")));
    ASSERT_EQ(first_called.get_future().wait_for(2000ms), std::future_status::ready);
  }  // the client leaves while the handler holds the Responder
  HttpResponse response;
  response.body = "too late";
  {
    const std::lock_guard lock(mutex);
    kept.front()(response);  // the server still runs the connection: written to a closed peer
  }
  RawClient second(server->port());
  ASSERT_TRUE(second.send(get("/pending")));
  ASSERT_TRUE(eventually([&] {
    const std::lock_guard lock(mutex);
    return kept.size() == 2;
  }));
  server->stop(0ms);  // closes the pending connection at once
  EXPECT_TRUE(second.closed_within(2000ms));
  EXPECT_EQ(server->open_connections(), 0u);
  server.reset();
  const std::lock_guard lock(mutex);
  kept.back()(response);  // the server is gone: nothing happens
  kept.clear();           // nor when the last copies go away unanswered
}

// ---- stop --------------------------------------------------------------------------------------

TEST(HttpServer, StopDrainsARequestInFlight) {
  Later later;
  std::promise<void> called;
  auto server = start(test_options(), [&](HttpRequest request, Responder respond) {
    if (request.target != "/slow") return echo(std::move(request), std::move(respond));
    called.set_value();
    later.run(100ms, [respond = std::move(respond)] {
      HttpResponse response;
      response.body = "done";
      respond(std::move(response));
    });
  });
  ASSERT_TRUE(server);
  const std::uint16_t port = server->port();
  RawClient idle(port);
  ASSERT_TRUE(idle.send(get("/warm")));
  ASSERT_TRUE(idle.read_response());

  RawClient busy(port);
  ASSERT_TRUE(busy.send(get("/slow")));
  ASSERT_EQ(called.get_future().wait_for(2000ms), std::future_status::ready);
  const auto begin = SteadyTime::now();
  std::thread stopper([&] { server->stop(2000ms); });

  EXPECT_TRUE(idle.closed_within(1000ms));  // idle connections go at once
  const auto reply = busy.read_response();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "done");
  EXPECT_EQ(reply->header("connection"), "close");
  EXPECT_TRUE(busy.closed_within(2000ms));
  stopper.join();
  EXPECT_LT(SteadyTime::now() - begin, 1500ms);
  EXPECT_EQ(server->open_connections(), 0u);

  RawClient after(port);  // nobody listens any more
  EXPECT_TRUE(!after.connected() || after.closed_within(1000ms));
  server->stop();  // idempotent
}

TEST(HttpServer, StopGivesUpAfterTheDrainTime) {
  std::mutex mutex;
  std::vector<Responder> kept;
  auto server = start(test_options(), [&](HttpRequest, Responder respond) {
    const std::lock_guard lock(mutex);
    kept.push_back(std::move(respond));
  });
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(get("/never")));
  ASSERT_TRUE(eventually([&] {
    const std::lock_guard lock(mutex);
    return !kept.empty();
  }));
  const auto begin = SteadyTime::now();
  server->stop(200ms);
  const auto took = SteadyTime::now() - begin;
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_TRUE(client.closed_within(1000ms));
  server.reset();
  const std::lock_guard lock(mutex);
  kept.clear();
}

// ---- start -------------------------------------------------------------------------------------

TEST(HttpServer, PortInUseIsAnErrorNamingHostAndPort) {
  auto first = start(test_options());
  ASSERT_TRUE(first);
  auto options = test_options();
  options.port = first->port();
  const auto second = HttpServer::start(options, echo);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().message,
            "127.0.0.1:" + std::to_string(first->port()) + ": address already in use");
}

TEST(HttpServer, BadHostIsRejected) {
  auto options = test_options();
  options.host = "no.such.host.invalid";
  options.port = 8123;
  const auto started = HttpServer::start(options, echo);
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error().message.rfind("no.such.host.invalid:8123: ", 0), 0u)
      << started.error().message;
}

TEST(HttpServer, LocalhostAndIpv6) {
  auto options = test_options();
  options.host = "localhost";
  auto local = start(options);
  ASSERT_TRUE(local);
  RawClient client(local->port());
  ASSERT_TRUE(client.send(get("/")));
  const auto reply = client.read_response();
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->body.find("peer=127.0.0.1\n"), std::string::npos);

  options.host = "::";
  auto any = HttpServer::start(options, echo);
  if (!any) GTEST_SKIP() << "no IPv6 here: " << any.error().message;
  RawClient v4((*any)->port(), "127.0.0.1");  // an IPv4-mapped peer, printed as IPv4
  ASSERT_TRUE(v4.send(get("/")));
  const auto mapped = v4.read_response();
  ASSERT_TRUE(mapped);
  EXPECT_NE(mapped->body.find("peer=127.0.0.1\n"), std::string::npos) << mapped->body;
  RawClient v6((*any)->port(), "::1");
  if (!v6.connected()) GTEST_SKIP() << "no IPv6 loopback";
  ASSERT_TRUE(v6.send(get("/")));
  const auto native = v6.read_response();
  ASSERT_TRUE(native);
  EXPECT_NE(native->body.find("peer=::1\n"), std::string::npos) << native->body;
}

// ---- access log --------------------------------------------------------------------------------

TEST(HttpServer, AccessLogHasOneLinePerRequestAndProtocolError) {
  LogCapture log;
  auto options = test_options(&log);
  options.max_body_bytes = 16;
  auto server = start(options);
  ASSERT_TRUE(server);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(post("/v1/check?key=a&n=1", "{}")));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(log.wait_for("method=POST path=/v1/check status=200", "peer=127.0.0.1"));
  ASSERT_TRUE(client.send(post("/upload", std::string(100, 'u'))));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(log.wait_for("method=POST path=/upload status=413", "peer=127.0.0.1"));
  RawClient bad(server->port());
  ASSERT_TRUE(bad.send("nonsense\r\n\r\n"));
  ASSERT_TRUE(bad.read_response());
  EXPECT_TRUE(log.wait_for("method=- path=- status=400", "peer=127.0.0.1"));
  EXPECT_EQ(log.lines().size(), 3u);
}

// Every line starts with the time it was written: RFC 3339, UTC ('Z'), in milliseconds, within
// the moments before the request and after its line arrived.
TEST(HttpServer, AccessLogLinesStartWithAnRfc3339UtcTimestamp) {
  const auto wall_ms = [] {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  LogCapture log;
  auto server = start(test_options(&log));
  ASSERT_TRUE(server);
  const std::int64_t before = wall_ms();
  RawClient client(server->port());
  ASSERT_TRUE(client.send(post("/v1/check", "{}")));
  ASSERT_TRUE(client.read_response());
  ASSERT_TRUE(log.wait_for("method=POST path=/v1/check status=200", "peer=127.0.0.1"));
  const std::int64_t after = wall_ms();
  ASSERT_EQ(log.lines().size(), 1u);
  const std::string line = log.lines().front();
  const std::optional<std::int64_t> at = timestamp_of(line);
  ASSERT_TRUE(at.has_value()) << line;
  EXPECT_GE(*at, before) << line;
  EXPECT_LE(*at, after) << line;
  EXPECT_EQ(line.substr(kTimestampLength, 13), " method=POST ") << line;
}

TEST(HttpServer, LogRequestsOffWritesNoLines) {
  LogCapture log;
  auto options = test_options(&log);
  options.log_requests = false;
  auto server = start(options);
  ASSERT_TRUE(server);
  RawClient client(server->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.send(post("/v1/check", "{}")));
    const auto reply = client.read_response();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
  }
  RawClient bad(server->port());
  ASSERT_TRUE(bad.send("nonsense\r\n\r\n"));
  ASSERT_TRUE(bad.read_response());
  server->stop();
  EXPECT_TRUE(log.lines().empty());
}

// ---- load --------------------------------------------------------------------------------------

TEST(HttpServer, ManyConcurrentKeepAliveClientsAreAllAnswered) {
  auto options = test_options();
  options.threads = 4;
  auto server = start(options);
  ASSERT_TRUE(server);
  constexpr int kClients = 8;
  constexpr int kRequests = 200;
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RawClient client(server->port());
      for (int i = 0; i < kRequests; ++i) {
        const std::string body = std::to_string(c) + ":" + std::to_string(i);
        if (!client.send(post("/load/" + std::to_string(c), body))) return;
        const auto reply = client.read_response();
        if (!reply || reply->status != 200) return;
        if (reply->body.find("\nbody=" + body) == std::string::npos) return;
        if (reply->body.find("target=/load/" + std::to_string(c) + "\n") == std::string::npos) {
          return;
        }
        ++good;
      }
    });
  }
  for (std::thread& thread : clients) thread.join();
  EXPECT_EQ(good.load(), kClients * kRequests);
}

}  // namespace
}  // namespace spillway::server
