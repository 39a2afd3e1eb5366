#include "src/cli/http_load.h"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstdio>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "src/cli/http_client.h"
#include "src/core/text.h"

namespace spillway::cli {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Steady = std::chrono::steady_clock;

// How long the run waits, once it is over, for answers still on their way.
constexpr std::chrono::seconds kDrainTimeout{5};
// The most bytes of an error answer's body kept in the first error.
constexpr std::size_t kShownBody = 300;

// The most bytes of one answer (headers and body); a longer one is an error.
constexpr std::size_t kMaxAnswer = 64 * 1024;

// What the threads share: the budget and the end.
struct Run {
  const HttpLoad& load;
  std::vector<tcp::endpoint> endpoints;
  Steady::time_point start;
  Steady::time_point end = Steady::time_point::max();  // with a duration: start + duration
  std::atomic<std::int64_t> issued{0};
  std::atomic<bool> stop{false};

  // The next request's number (0, 1, 2, ... in the order they are taken: what it sends), or -1
  // when the run is over.
  std::int64_t take() {
    if (stop.load(std::memory_order_relaxed)) return -1;
    const std::int64_t n = issued.fetch_add(1, std::memory_order_relaxed);
    return load.requests == 0 || n < load.requests ? n : -1;
  }
};

// `text` without the spaces and tabs around it.
std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A header line's value: after the first ':', trimmed.
std::string_view value_of(std::string_view line) {
  return trimmed(line.substr(line.find(':') + 1));
}

// Whether a Connection value (a comma-separated list) holds the token "close", in any case.
bool has_close_token(std::string_view value) {
  for (;;) {
    const std::size_t comma = value.find(',');
    const std::string_view token = trimmed(value.substr(0, comma));
    if (ascii_iequals(token, "close")) return true;
    if (comma == std::string_view::npos) return false;
    value.remove_prefix(comma + 1);
  }
}

// One answer at the front of `bytes`: its status and total length, once it is all there.
struct Answer {
  int status = 0;
  std::size_t length = 0;   // 0: not complete yet
  std::size_t body_at = 0;  // where the body starts
  bool close = false;       // "Connection: close": the server ends the connection after it
  std::string problem;      // set: the bytes are not an answer this client reads
};

Answer read_answer(std::string_view bytes) {
  Answer answer;
  const std::size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return answer;
  const std::string_view head = bytes.substr(0, end + 2);
  if (head.size() < 12 || !head.starts_with("HTTP/1.")) {
    answer.problem = "not an HTTP/1.x answer";
    return answer;
  }
  if (std::from_chars(head.data() + 9, head.data() + 12, answer.status).ptr != head.data() + 12) {
    answer.problem = "an answer without a 3-digit status code";
    return answer;
  }
  std::size_t body = 0;
  // `head` ends with "\r\n": each line after the status line ends where the next "\r\n" is.
  for (std::size_t at = head.find("\r\n"); at + 2 < head.size(); at = head.find("\r\n", at + 2)) {
    const std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - at - 2);
    if (ascii_istarts_with(line, "transfer-encoding:")) {
      answer.problem = "a chunked answer (this client reads Content-Length only)";
      return answer;
    }
    if (ascii_istarts_with(line, "connection:")) answer.close = has_close_token(value_of(line));
    if (ascii_istarts_with(line, "content-length:")) {
      const std::string_view value = value_of(line);
      const auto [end_of_number, ec] =
          std::from_chars(value.data(), value.data() + value.size(), body);
      if (ec != std::errc() || end_of_number != value.data() + value.size() || body > kMaxAnswer) {
        answer.problem = "Content-Length \"" + std::string(value.substr(0, 32)) +
                         "\" is not a number up to 65536";
        return answer;
      }
    }
  }
  answer.body_at = end + 4;
  if (bytes.size() >= end + 4 + body) answer.length = end + 4 + body;
  return answer;
}

// One keep-alive connection: sends a request, reads its answer, sends the next (closed loop), or
// the next at its scheduled time (open loop). Lives on one io_context.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, Run& run, int index, LoadTotals& totals)
      : run_(run), socket_(io), timer_(io), totals_(totals) {
    const HttpLoad& load = run.load;
    if (load.rate > 0) {
      interval_ = std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(
          static_cast<double>(load.connections) / static_cast<double>(load.rate)));
      scheduled_ = run.start + interval_ * index / load.connections - interval_;
    }
    const bool ipv6 = load.target.host.find(':') != std::string::npos;
    host_header_ =
        (ipv6 ? "[" + load.target.host + "]" : load.target.host) + ":" + load.target.port;
  }

  void start() { connect(); }

 private:
  // Through the CLI's one HTTP client (src/cli/http_client.h): its connect timeout and its words.
  // Sending and reading stay here: this loop reuses its buffers and parses only what it needs.
  void connect() {
    connect_within(socket_, run_.endpoints, HttpTimeouts{}.connect,
                   [self = shared_from_this()](std::string failure) {
                     if (!failure.empty()) return self->fail("connect: " + failure);
                     self->socket_.set_option(tcp::no_delay(true));
                     self->next();
                   });
  }

  void next() {
    const Steady::time_point now = Steady::now();
    const Steady::time_point due = run_.load.rate == 0 ? now : scheduled_ + interval_;
    if (due >= run_.end) return;  // the run is over: nothing is due after its end
    ticket_ = run_.take();
    if (ticket_ < 0) return;
    scheduled_ = due;
    if (run_.load.rate == 0) return send();
    if (scheduled_ <= now) return send();  // behind: at once; its latency shows the delay
    timer_.expires_at(scheduled_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
      if (!error) self->send();
    });
  }

  void send() {
    const auto n = static_cast<std::uint64_t>(ticket_);
    char stream_body[128];
    std::string_view body;
    if (run_.load.body) {
      body = *run_.load.body;
    } else {
      // Written here, not by JsonWriter (src/core/json_writer.h): the hot loop of a load
      // generator, into a stack buffer, and nothing in it needs escaping (digits only).
      const int length = std::snprintf(
          stream_body, sizeof stream_body,
          R"({"ip":"10.%d.%d.%d","api_key":"k%d","endpoint":"/search"})", static_cast<int>(n % 7),
          static_cast<int>((n / 251) % 200), static_cast<int>(n % 250), static_cast<int>(n % 1000));
      body = std::string_view(stream_body, static_cast<std::size_t>(length));
    }
    out_.clear();
    out_.append("POST ").append(run_.load.target.path).append(" HTTP/1.1\r\nHost: ");
    out_.append(host_header_).append("\r\nContent-Type: application/json\r\nContent-Length: ");
    out_.append(std::to_string(body.size())).append("\r\n\r\n").append(body);
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
          if (error) return self->fail("send: " + error.message());
          self->read();
        });
  }

  void read() {
    if (in_.size() - used_ < 4096) in_.resize(std::max<std::size_t>(in_.size() * 2, 8192));
    socket_.async_read_some(
        asio::buffer(in_.data() + used_, in_.size() - used_),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          if (error) return self->fail("read: " + error.message());
          self->used_ += n;
          self->on_bytes();
        });
  }

  void on_bytes() {
    const Answer answer = read_answer(std::string_view(in_.data(), used_));
    if (!answer.problem.empty()) return fail(answer.problem);
    if (answer.length == 0) {
      if (used_ >= kMaxAnswer) return fail("an answer longer than 64 KiB");
      return read();
    }
    const auto took = Steady::now() - scheduled_;
    if (answer.status >= 200 && answer.status < 300) {
      ++totals_.admitted;
    } else if (answer.status == 429 || answer.status == 503) {
      ++totals_.denied;
    } else {
      std::string what = "status " + std::to_string(answer.status);
      if (totals_.errors == 0) {  // the first: with the start of its body, one line
        std::string_view body(in_.data() + answer.body_at, answer.length - answer.body_at);
        if (!body.empty()) {
          std::string shown = utf8_or_escaped(body.substr(0, kShownBody));
          std::replace_if(
              shown.begin(), shown.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
          what += ": " + shown + (body.size() > kShownBody ? "..." : "");
        }
      }
      totals_.error(std::move(what));
    }
    totals_.latencies.record(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    std::copy(in_.begin() + static_cast<std::ptrdiff_t>(answer.length),
              in_.begin() + static_cast<std::ptrdiff_t>(used_), in_.begin());
    used_ -= answer.length;
    if (answer.close) return reconnect();  // nginx does after keepalive_requests (1,000)
    next();
  }

  // A connection the server closes after an answer, as it said it would: a new one, no error.
  void reconnect() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    used_ = 0;
    socket_ = tcp::socket(timer_.get_executor());
    connect();
  }

  // A broken connection (or one that could not be made) is an error; it connects again.
  void fail(std::string what) {
    totals_.error(std::move(what));
    boost::system::error_code ignored;
    socket_.close(ignored);
    used_ = 0;
    if (run_.stop.load() || ++failures_ > 100) return;  // a dead server: stop trying
    socket_ = tcp::socket(timer_.get_executor());
    connect();
  }

  Run& run_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  LoadTotals& totals_;
  std::string host_header_;
  Steady::duration interval_{};
  Steady::time_point scheduled_{};
  std::int64_t ticket_ = -1;  // the request being sent or awaited
  int failures_ = 0;
  std::string out_;
  std::vector<char> in_;
  std::size_t used_ = 0;
};

}  // namespace

Result<HttpTarget> parse_http_target(std::string_view url) {
  Result<HttpUrl> parsed = parse_http_url(url, "80");
  if (!parsed) {
    return invalid_argument("--http " + quote_for_error(url, kUrlShown) + ": " +
                            parsed.error().message);
  }
  return parsed;
}

Result<LoadTotals> run_http_load(const HttpLoad& load) {
  Run run{.load = load};
  auto addresses = resolve_endpoint({load.target.host, load.target.port});
  if (!addresses) {
    return std::unexpected(Error{Errc::kUnavailable, "--http: " + addresses.error().message});
  }
  run.endpoints = std::move(*addresses);
  const int threads = std::clamp(load.threads, 1, load.connections);
  std::vector<std::unique_ptr<asio::io_context>> loops;
  std::vector<LoadTotals> totals(static_cast<std::size_t>(load.connections));
  for (int t = 0; t < threads; ++t) loops.push_back(std::make_unique<asio::io_context>(1));
  run.start = Steady::now() + std::chrono::milliseconds(1);
  if (load.requests == 0) run.end = run.start + load.duration;
  for (int c = 0; c < load.connections; ++c) {
    auto connection = std::make_shared<Connection>(*loops[static_cast<std::size_t>(c % threads)],
                                                   run, c, totals[static_cast<std::size_t>(c)]);
    connection->start();
  }
  std::atomic<int> running{threads};
  std::vector<std::jthread> workers;
  for (auto& loop : loops) {
    workers.emplace_back([&running, &loop] {
      prctl(PR_SET_TIMERSLACK, 1UL);  // timers on time to the µs, not the default 50 µs late
      loop->run();
      --running;
    });
  }
  const auto wait_for_threads = [&](Steady::time_point until) {
    while (running.load() > 0 && Steady::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  if (load.requests == 0) {
    wait_for_threads(run.start + load.duration);
    run.stop = true;
    wait_for_threads(Steady::now() + kDrainTimeout);
  } else {
    wait_for_threads(Steady::time_point::max());
  }
  const Steady::time_point ended = Steady::now();
  for (auto& loop : loops) loop->stop();
  workers.clear();

  LoadTotals all;
  for (const LoadTotals& t : totals) all.add(t);
  all.seconds = std::chrono::duration<double>(ended - run.start).count();
  return all;
}

}  // namespace spillway::cli
