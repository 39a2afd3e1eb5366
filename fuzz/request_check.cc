#include "fuzz/request_check.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz/check_util.h"
#include "spillway/clock.h"
#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "src/policy/endpoint_path.h"
#include "src/server/http_server.h"
#include "src/server/request_reader.h"
#include "src/server/service.h"

namespace spillway::fuzz {
namespace {

namespace json = boost::json;
using server::HttpRequest;
using server::HttpResponse;
using server::ReadRequest;
using server::RequestReader;

constexpr Micros kStart = 1'700'000'000 * kMicrosPerSecond;
constexpr std::size_t kReadSize = 4096;  // what a connection prepares for one read

// The server's service: the seed policy, with 127.0.0.1 as a trusted proxy, on a MemoryStore.
// A fresh one for each input (clock, keys and metrics start from zero), so that an input's answers
// do not depend on earlier inputs and a crash reproduces from its input alone.
struct Fixture {
  Fixture() {
    static const policy::Config config = [] {
      policy::Config out = policy::default_config();
      out.server.trusted_proxies = {*policy::parse_cidr("127.0.0.1/32")};
      return out;
    }();
    // Few keys: a pipelined input can fill the store and reach the backend-error answers.
    auto made = server::Service::make(config, std::make_unique<MemoryStore>(MemoryStoreOptions{
                                                  .shards = 4, .max_keys = 32, .clock = clock}));
    if (!made) violated("the seed policy does not build", made.error().message);
    service = std::move(*made);
  }

  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(kStart);
  std::unique_ptr<server::Service> service;
};

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool is_safe_value(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

const std::string* find_header(const HttpResponse& response, std::string_view name) {
  for (const auto& [n, v] : response.headers) {
    if (iequals(n, name)) return &v;
  }
  return nullptr;
}

std::string describe(const HttpRequest& request, const HttpResponse& response) {
  return request.method + " " + request.target + " -> " + std::to_string(response.status) + " " +
         response.body.substr(0, 200);
}

// Prometheus text format 0.0.4: "# HELP/TYPE ..." lines and samples
// `name{label="value",...} number`, label values escaped (\\, \", \n).
bool is_metric_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)) != 0);
}

std::size_t skip_name(std::string_view line, std::size_t at) {
  const std::size_t start = at;
  while (at < line.size() && is_metric_name_char(line[at], at == start)) ++at;
  return at;
}

bool is_sample_line(std::string_view line) {
  std::size_t at = skip_name(line, 0);
  if (at == 0) return false;
  if (at < line.size() && line[at] == '{') {
    ++at;
    while (at < line.size() && line[at] != '}') {
      const std::size_t name_end = skip_name(line, at);
      if (name_end == at || line.substr(name_end, 2) != "=\"") return false;
      at = name_end + 2;
      for (;;) {
        if (at >= line.size()) return false;
        if (line[at] == '"') break;
        if (line[at] == '\\') {
          if (at + 1 >= line.size() ||
              std::string_view("\\\"n").find(line[at + 1]) == std::string_view::npos) {
            return false;
          }
          ++at;
        }
        ++at;
      }
      ++at;  // the closing quote
      if (at < line.size() && line[at] == ',') ++at;
    }
    if (at >= line.size()) return false;
    ++at;  // '}'
  }
  if (at >= line.size() || line[at] != ' ') return false;
  const std::string_view value = line.substr(at + 1);
  return !value.empty() && value.find(' ') == std::string_view::npos;
}

void check_metrics(const HttpRequest& request, const HttpResponse& response) {
  std::string_view text = response.body;
  if (text.empty() || text.back() != '\n') violated("/metrics does not end with a newline");
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) continue;
    if (!is_sample_line(line)) {
      violated("/metrics has a malformed line",
               std::string(line) + " (after " + request.target + ")");
    }
  }
}

void check_response(const HttpRequest& request, const HttpResponse& response) {
  const std::string_view path =
      std::string_view(request.target).substr(0, request.target.find('?'));
  const int s = response.status;
  const bool settles = path == "/v1/commit" || path == "/v1/cancel";
  if (s != 200 && s != 204 && s != 400 && s != 401 && s != 403 && s != 404 && s != 405 &&
      s != 413 && s != 429 && !(s == 409 && settles)) {
    violated("unexpected status", describe(request, response));
  }
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name) || !is_safe_value(value)) {
      violated("response header is not a token with a safe value",
               std::string(name) + ": " + value);
    }
  }
  if (!is_safe_value(response.content_type)) violated("unsafe content type");
  if (s == 405 && find_header(response, "allow") == nullptr) violated("405 without Allow");
  const bool auth = path == "/v1/auth";
  const bool decision = path == "/v1/limit" || path == "/v1/check";
  if ((s == 204 || s == 403 || s == 401) && !auth) {
    violated("204/401/403 from an endpoint other than /v1/auth", describe(request, response));
  }
  if (s == 429 && !decision) {
    violated("429 from a non-decision endpoint", describe(request, response));
  }

  if (path == "/metrics" && s == 200) return check_metrics(request, response);
  if (response.body.empty() && auth && (s == 204 || s == 403)) return;  // nginx needs no body
  if ((path == "/" || path == "/dashboard") && s == 200) {
    if (!response.content_type.starts_with("text/")) {
      violated("a page that is not text",
               std::string(response.content_type) + " for " + request.target);
    }
    return;
  }
  if (response.content_type != "application/json") {
    violated("unexpected content type",
             std::string(response.content_type) + " for " + describe(request, response));
  }
  json::parse_options options;
  boost::system::error_code ec;
  const json::value body = json::parse(response.body, ec, {}, options);
  if (ec) violated("response body is not JSON", ec.message() + ": " + describe(request, response));
  if (!body.is_object()) {
    violated("response body is not a JSON object", describe(request, response));
  }
  const json::object& object = body.as_object();
  if (s >= 400 && s != 403 && s != 429) {
    const json::value* error = object.if_contains("error");
    if (error == nullptr || !error->is_string() || error->as_string().empty()) {
      violated("error response without \"error\"", describe(request, response));
    }
  }
  if ((decision && (s == 200 || s == 429)) || (auth && (s == 204 || s == 403))) {
    const json::value* allowed = object.if_contains("allowed");
    if (allowed == nullptr || !allowed->is_bool() || allowed->as_bool() != (s == 200 || s == 204)) {
      violated("decision whose \"allowed\" disagrees with its status", describe(request, response));
    }
  }
}

// SPILLWAY_FUZZ_TRACE=1 prints each request and answer on stderr (to see what an input does).
bool tracing() {
  static const bool on = [] {
    const char* value = std::getenv("SPILLWAY_FUZZ_TRACE");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return on;
}

// The original URI of a /v1/auth request, made canonical: idempotent, and without what
// canonical_path() removes (repeated slashes, dot segments, a trailing slash, a query,
// lower-case escapes, raw bytes outside printable ASCII).
void check_canonical_path(const HttpRequest& request) {
  const std::string* uri = request.header("x-original-uri");
  if (uri == nullptr) return;
  for (bool fold : {true, false}) {
    auto once = policy::canonical_path(*uri, fold);
    if (!once) continue;
    auto twice = policy::canonical_path(*once, fold);
    if (!twice || *twice != *once) violated("canonical_path is not idempotent", *uri);
    const std::string& p = *once;
    const bool bad_shape = p.empty() || p.front() != '/' || (p.size() > 1 && p.back() == '/') ||
                           p.find("//") != std::string::npos ||
                           p.find("/./") != std::string::npos ||
                           p.find("/../") != std::string::npos || p.ends_with("/.") ||
                           p.ends_with("/..") || p.find_first_of("?#;") != std::string::npos;
    if (bad_shape) violated("canonical_path left a non-canonical shape", *uri + " -> " + p);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const auto c = static_cast<unsigned char>(p[i]);
      if (c <= 0x20 || c >= 0x7f) violated("canonical_path left a raw byte", *uri + " -> " + p);
      if (c == '%' && (i + 2 >= p.size() || std::islower(static_cast<unsigned char>(p[i + 1])) ||
                       std::islower(static_cast<unsigned char>(p[i + 2])))) {
        violated("canonical_path left a lower-case or short escape", *uri + " -> " + p);
      }
      if (fold && c >= 'A' && c <= 'Z' && (i < 2 || p[i - 1] != '%') &&
          (i < 2 || p[i - 2] != '%')) {
        violated("canonical_path left an upper-case letter while folding", *uri + " -> " + p);
      }
    }
  }
}

// Hands one request to the service and checks its single, synchronous answer.
void serve(Fixture& f, ReadRequest read, std::string_view peer) {
  HttpRequest request = std::move(read.request);
  request.peer_address = std::string(peer);
  const HttpRequest copy = request;
  check_canonical_path(copy);
  int answers = 0;
  HttpResponse response;
  f.service->handle(std::move(request), [&answers, &response](HttpResponse r) {
    ++answers;
    response = std::move(r);
  });
  if (answers != 1) {
    violated("the service answered " + std::to_string(answers) + " times (memory store: once)",
             copy.method + " " + copy.target);
  }
  if (tracing()) std::fprintf(stderr, "%s\n", describe(copy, response).c_str());
  check_response(copy, response);
  f.clock->advance(kMicrosPerSecond / 4);
}

// Read sizes: a xorshift generator seeded with the input's first byte.
class Reads {
 public:
  explicit Reads(std::uint8_t control)
      : state_(0x9e3779b9u ^ (control * 0x01000193u)), bits_(control & 0x0f) {}
  std::size_t next(std::size_t left) {
    if (bits_ == 0) return left;
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    const std::size_t most = std::size_t{1} << (bits_ - 1);
    return std::min(left, 1 + state_ % most);
  }

 private:
  std::uint32_t state_;
  int bits_;
};

}  // namespace

void check_request_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  Fixture f;
  const std::string_view peer = (data[0] & 0x10) != 0 ? "::1" : "127.0.0.1";
  Reads reads(data[0]);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  const server::HttpServerOptions defaults;
  RequestReader reader(defaults.max_header_bytes, defaults.max_body_bytes);
  bool header_done_early = false;  // the header was complete while the body was not
  int continues = 0;               // "100 Continue" asked for the current request
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t n = reads.next(bytes.size() - at);
    const auto space = reader.prepare(std::max(n, kReadSize));
    std::memcpy(space.data(), bytes.data() + at, n);
    reader.commit(n);
    at += n;
    for (;;) {
      const RequestReader::State state = reader.parse();
      if (state == RequestReader::State::kNeedMore) {
        if (reader.parse() != state) violated("parse() is not idempotent while it needs more");
        if (reader.method() != "-") header_done_early = true;
        if (reader.take_continue_request()) {
          ++continues;
          if (tracing()) std::fprintf(stderr, "reader: 100 Continue\n");
        }
        if (continues > 1) violated("100 Continue asked for twice in one request");
        break;
      }
      if (state == RequestReader::State::kError) {
        const int status = reader.error_status();
        const std::string& message = reader.error_message();
        if (status != 400 && status != 413 && status != 431) {
          violated("reader error status is not 400, 413 or 431", std::to_string(status));
        }
        if (message.empty()) violated("reader error without a message");
        if (status == 400 && !message.starts_with("malformed request: ")) {
          violated("400 from the reader does not say \"malformed request\"", message);
        }
        if (reader.parse() != state) violated("reader error did not stick");
        if (reader.take_continue_request()) violated("100 Continue asked for after an error");
        if (tracing()) std::fprintf(stderr, "reader: %d %s\n", status, message.c_str());
        return;  // the connection answers and closes
      }
      const std::string method = reader.method();
      const std::string path = reader.path();
      ReadRequest read = reader.take();
      const HttpRequest& request = read.request;
      if (method != request.method ||
          path != std::string_view(request.target).substr(0, request.target.find('?'))) {
        violated("the reader reported another request line",
                 method + " " + path + " vs " + request.method + " " + request.target);
      }
      for (const auto& [name, value] : request.headers) {
        if (std::any_of(name.begin(), name.end(), [](char c) { return c != lower(c); })) {
          violated("header name not lower-cased", name);
        }
      }
      if (continues > 0) {
        const std::string* expect = request.header("expect");
        if (read.http10 || expect == nullptr || !iequals(*expect, "100-continue")) {
          violated("100 Continue asked for without \"Expect: 100-continue\"");
        }
      } else if (header_done_early && !read.http10) {
        const std::string* expect = request.header("expect");
        if (expect != nullptr && iequals(*expect, "100-continue")) {
          violated("\"Expect: 100-continue\" while the body was missing, but no 100 Continue");
        }
      }
      header_done_early = false;
      continues = 0;
      const bool keep_alive = read.keep_alive;
      serve(f, std::move(read), peer);
      if (!keep_alive) return;  // the connection closes after answering
    }
  }
}

}  // namespace spillway::fuzz
