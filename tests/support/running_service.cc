#include "tests/support/running_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string_view>
#include <utility>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "tests/support/redis_cluster.h"

namespace spillway::testing {

RunningService start_service(policy::Config config, std::unique_ptr<Store> store) {
  RunningService running;
  auto service = server::Service::make(std::move(config), std::move(store));
  if (!service) {
    ADD_FAILURE() << "Service::make: " << service.error().message;
    return running;
  }
  running.service = std::move(*service);
  server::Service* raw = running.service.get();
  auto started = server::HttpServer::start(
      {.host = "127.0.0.1", .port = 0, .threads = 2, .access_log = [](std::string_view) {}},
      [raw](server::HttpRequest request, server::Responder respond) {
        raw->handle(std::move(request), std::move(respond));
      });
  if (!started) {
    ADD_FAILURE() << "HttpServer::start: " << started.error().message;
    return running;
  }
  running.http_server = std::move(*started);
  return running;
}

std::unique_ptr<Store> open_test_store(const std::string& memory_or_url,
                                       const std::string& key_prefix, bool connected) {
  if (memory_or_url == "memory") return std::make_unique<MemoryStore>();
  static std::atomic<int> counter{0};
  auto opened = RedisStore::open(
      {.url = memory_or_url,
       .key_prefix = key_prefix + std::to_string(getpid()) + "-" + std::to_string(counter++),
       .timeout = std::chrono::milliseconds(2000)});
  if (!opened) {
    ADD_FAILURE() << "cannot open " << memory_or_url << ": " << opened.error().message;
    return nullptr;
  }
  if (Result<void> ready =
          connected ? (*opened)->wait_ready(std::chrono::seconds(5)) : Result<void>{};
      !ready) {
    ADD_FAILURE() << memory_or_url << " is not ready: " << ready.error().message;
    return nullptr;
  }
  return std::move(*opened);
}

std::string backend_url(const std::string& backend, const std::function<std::string()>& redis_url) {
  if (backend == "redis") return redis_url();
  if (backend == "cluster") return shared_cluster().url();
  return backend;
}

}  // namespace spillway::testing
