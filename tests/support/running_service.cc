#include "tests/support/running_service.h"

#include <gtest/gtest.h>

#include <string_view>
#include <utility>

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

}  // namespace spillway::testing
