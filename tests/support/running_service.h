// A server::Service behind a real HttpServer on 127.0.0.1 and a free port, for the tests that
// talk to the HTTP API over loopback. The test chooses the store and the config; this wires them.
//
// Ownership: RunningService owns both; the HTTP server is stopped before the service goes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "spillway/store.h"
#include "src/config/config.h"
#include "src/server/http_server.h"
#include "src/server/service.h"

namespace spillway::testing {

struct RunningService {
  std::unique_ptr<server::Service> service;
  std::unique_ptr<server::HttpServer> http_server;  // declared last: destroyed first
  // 0 when the server did not start (the test has failed already; requests to it fail too).
  std::uint16_t port() const { return http_server ? http_server->port() : 0; }
};

// Two HTTP threads, no access log. A config or server that cannot start fails the test (gtest
// ADD_FAILURE) and leaves the member null.
RunningService start_service(policy::Config config, std::unique_ptr<Store> store);

// The store a service test runs on: "memory", or a Redis URL, opened with `key_prefix` plus a
// number unique in this process, and a 2 s timeout (a slow sanitized run is no backend error).
// With `connected`, returned only once connected (so /readyz answers the same from the first
// request); without, a Redis that is down is a store that fails its checks (on_error tests). A URL
// that cannot be opened, or a Redis not reached when `connected` asks for it, fails the test
// (ADD_FAILURE) and returns null.
std::unique_ptr<Store> open_test_store(const std::string& memory_or_url,
                                       const std::string& key_prefix, bool connected);

// What a test parameterised by backend name opens: "memory" as it is, "redis" the URL that
// `redis_url` gives (called only then, so that a memory run starts no redis-server), "cluster"
// the shared Redis Cluster's (tests/support/redis_cluster.h).
std::string backend_url(const std::string& backend, const std::function<std::string()>& redis_url);

}  // namespace spillway::testing
