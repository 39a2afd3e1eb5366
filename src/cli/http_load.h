// spillway bench --http URL: HTTP/1.1 load on keep-alive connections, closed loop (each
// connection sends its next request when the answer came) or open loop (--rate: each connection
// has its own schedule, and a request's latency counts from its scheduled time, so a server that
// stalls is charged for the requests queued behind the stall, as wrk2 does).
//
// Every request is a POST of the seed policy's attributes, {"ip":...,"api_key":...,"endpoint":
// "/search"}, over 10,000 client addresses and 1,000 API keys (bench/check.lua's stream): the same
// bytes whatever answers them, spillway's /v1/check or nginx's limit_req. 2xx counts as admitted,
// 429 and 503 as denied, anything else (or a broken connection) as an error. With a body of its
// own (bench --body, --body-file), every request POSTs those bytes instead, so that any policy
// can be loaded. The first error is kept with the answer's status and the start of its body
// ("status 400: {\"error\":...}"), so that a refused stream says why.
//
// It resolves and connects through the CLI's one HTTP client (src/cli/http_client.h: the same
// 10 s connect timeout and words); its requests and answers are its own, written and read in
// buffers each connection reuses, so that the load generator costs little per request.
//
// Thread safety: run_http_load() runs its own threads and returns when they are done.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "spillway/error.h"
#include "src/cli/http_client.h"
#include "src/cli/load_totals.h"

namespace spillway::cli {

// What `bench --http` sends to: src/cli/http_client.h's HttpUrl, the port 80 when not named.
using HttpTarget = HttpUrl;

// parse_http_url with the default port 80; the error starts with `--http "URL": `.
Result<HttpTarget> parse_http_target(std::string_view url);

struct HttpLoad {
  HttpTarget target;
  int connections = 64;
  int threads = 2;        // event loops, connections spread over them
  std::int64_t rate = 0;  // requests/s offered in all; 0: closed loop
  std::chrono::milliseconds duration{5000};
  std::int64_t requests = 0;        // when > 0: stop after this many (not duration)
  std::optional<std::string> body;  // set: every request's body (JSON), instead of the stream
};

// Runs the load; an error when no connection could be opened at all. The latencies are those of
// every answered request; `seconds` is set.
Result<LoadTotals> run_http_load(const HttpLoad& load);

}  // namespace spillway::cli
