#include "tests/support/fault_fleet.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

#include "tests/support/http_client.h"

namespace spillway::testing {
namespace {

// libfaketime from Debian's faketime package, its thread-safe build (multiarch path first).
std::string libfaketime() {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/faketime/libfaketimeMT.so.1"}) {
    if (std::ifstream(path).good()) return path;
  }
  throw std::runtime_error(
      "libfaketimeMT.so.1 not found: install Debian's faketime package (scripts/setup.sh does)");
}

Answer classify(const HttpReply& reply) {
  if (reply.status == 200) {
    return reply.body.find("\"backend_error\"") != std::string::npos ? Answer::kFailOpen
                                                                     : Answer::kAdmitted;
  }
  if (reply.status == 429) return Answer::kDenied;
  return Answer::kError;
}

}  // namespace

FaultFleet::FaultFleet(FleetOptions options)
    : options_(std::move(options)), pause_ms_(options_.pause.count()) {
  const std::string base =
      "/tmp/spillway_faults_" + std::to_string(::getpid()) + "_" + options_.key_prefix;
  const std::string config = base + ".yaml";
  std::ofstream(config) << "server:\n  access_log: off\n"
                        << "backend:\n  url: " << options_.backend_url
                        << "\n  timeout: " << options_.backend_timeout.count()
                        << "ms\n  on_error: " << options_.on_error << "\n"
                        << options_.backend_lines << "layers:\n"
                        << options_.layer;
  std::vector<std::string> wrapper;
  if (options_.fake_clock) {
    std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
    wrapper = {"/usr/bin/env", "LD_PRELOAD=" + libfaketime(), "FAKETIME_NO_CACHE=1",
               "FAKETIME_DONT_FAKE_MONOTONIC=1",
               // libfaketime comes before the sanitizer's runtime in the library list.
               "ASAN_OPTIONS=" + asan + (asan.empty() ? "" : ":") + "verify_asan_link_order=0"};
  }
  for (int i = 0; i < options_.instances; ++i) {
    std::string url = options_.backend_url;
    if (options_.proxy_port != 0) {
      proxies_.push_back(std::make_unique<FaultProxy>());
      proxies_.back()->forward_to(options_.proxy_port);
      url = "redis://127.0.0.1:" + std::to_string(proxies_.back()->port());
    }
    const std::vector<std::string> args = {"--config", config, "--backend", url};
    const std::string log = base + "_" + std::to_string(i) + ".log";
    if (options_.fake_clock) {
      std::ofstream(clock_file(i)) << "+0\n";
      std::vector<std::string> with_clock = wrapper;
      with_clock.push_back("FAKETIME_TIMESTAMP_FILE=" + clock_file(i));
      servers_.push_back(std::make_unique<ServeProcess>(args, log, with_clock));
    } else {
      servers_.push_back(std::make_unique<ServeProcess>(args, log));
    }
    killed_.emplace_back(false);
  }
  for (const auto& server : servers_) {
    if (!server->ready()) throw std::runtime_error("an instance did not start:\n" + logs());
  }
}

FaultFleet::~FaultFleet() {
  stop_clients();
  for (int i = 0; i < size(); ++i) resume(i);  // a paused instance would not see its SIGTERM
  servers_.clear();
  proxies_.clear();
}

std::string FaultFleet::clock_file(int instance) const {
  return "/tmp/spillway_faults_" + std::to_string(::getpid()) + "_" + options_.key_prefix +
         "_clock_" + std::to_string(instance);
}

void FaultFleet::start_clients() {
  stop_ = false;
  for (int i = 0; i < size(); ++i) {
    for (int c = 0; c < options_.clients_per_instance; ++c) {
      clients_.emplace_back([this, i, c] { client(i, c); });
    }
  }
}

void FaultFleet::stop_clients() {
  stop_ = true;
  for (std::thread& thread : clients_) thread.join();
  clients_.clear();
}

void FaultFleet::client(int instance, int index) {
  std::mt19937 random(static_cast<unsigned>(instance * 1000 + index));
  std::uniform_int_distribution<int> pick(0, options_.keys - 1);
  const std::uint16_t port = servers_[static_cast<std::size_t>(instance)]->port();
  std::unique_ptr<HttpConnection> connection;
  while (!stop_.load() && !killed_[static_cast<std::size_t>(instance)].load()) {
    Operation op{.instance = instance, .key = key(pick(random)), .invoked = HistoryClock::now()};
    try {
      if (!connection) {
        connection = std::make_unique<HttpConnection>(port);
        const timeval limit{.tv_sec = kFleetClientTimeout.count(), .tv_usec = 0};
        ::setsockopt(connection->fd(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
      }
      const HttpReply reply =
          connection->request("POST", "/v1/check", R"({"api_key":")" + op.key + R"("})");
      op.answer = classify(reply);
      if (reply.status == 0) {
        connection.reset();
        if (HistoryClock::now() - op.invoked >= kFleetClientTimeout) op.answer = Answer::kNoAnswer;
      }
    } catch (const std::exception&) {
      op.answer = Answer::kError;
      connection.reset();
    }
    op.completed = HistoryClock::now();
    history_.add(std::move(op));
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_.load()));
  }
}

bool FaultFleet::decided_since(HistoryClock::time_point since, std::vector<int> instances) const {
  if (instances.empty()) {
    for (int i = 0; i < size(); ++i) instances.push_back(i);
  }
  const std::vector<Operation> ops = history_.operations();
  return std::all_of(instances.begin(), instances.end(), [&](int instance) {
    return std::any_of(ops.begin(), ops.end(), [&](const Operation& op) {
      return op.instance == instance && op.invoked > since &&
             (op.answer == Answer::kAdmitted || op.answer == Answer::kDenied);
    });
  });
}

void FaultFleet::pause(int instance) {
  if (!killed_.at(static_cast<std::size_t>(instance))) ::kill(server(instance).pid(), SIGSTOP);
}

void FaultFleet::resume(int instance) {
  if (!killed_.at(static_cast<std::size_t>(instance))) ::kill(server(instance).pid(), SIGCONT);
}

void FaultFleet::kill(int instance) {
  killed_.at(static_cast<std::size_t>(instance)) = true;
  server(instance).stop(SIGKILL);
}

void FaultFleet::set_clock_offset(int instance, std::chrono::seconds offset) {
  if (!options_.fake_clock) throw std::logic_error("set_clock_offset needs fake_clock");
  // Written aside and renamed: libfaketime re-reads the file at every clock read, and must never
  // see it empty or half written.
  const long long seconds = offset.count();
  const std::string file = clock_file(instance);
  std::ofstream(file + ".new", std::ios::trunc) << (seconds >= 0 ? "+" : "") << seconds << "\n";
  std::rename((file + ".new").c_str(), file.c_str());
}

std::string FaultFleet::logs() const {
  std::string all;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    all += "--- instance " + std::to_string(i) + ":\n" + servers_[i]->log();
  }
  return all;
}

void record_fault_row(const std::string& fault, const std::string& backend, const std::string& mode,
                      const HistoryReport& report) {
  const std::string row =
      "| " + fault + " | " + backend + " | " + mode + " | " + std::to_string(report.operations) +
      " | " + std::to_string(report.admitted) + " | " + std::to_string(report.over_admitted) +
      " | " + std::to_string(report.fail_open) + " | " + std::to_string(report.errors) + " | " +
      std::to_string(report.recovery.count()) + " |";
  std::printf("fault table: %s\n", row.c_str());
  if (const char* table = std::getenv("SPILLWAY_FAULT_TABLE")) {
    std::ofstream(table, std::ios::app) << row << "\n";
  }
}

std::chrono::milliseconds soak_scaled(std::chrono::milliseconds base) {
  const char* scale = std::getenv("SPILLWAY_SOAK_SCALE");
  const long long factor = scale != nullptr ? std::max(1LL, std::atoll(scale)) : 1;
  return base * factor;
}

}  // namespace spillway::testing
