// The fault suite's system under test and its clients: N `spillway serve` processes (each reaching
// Redis through a FaultProxy of its own when the backend is one Redis, so that one instance can be
// partitioned while the others still reach it), and M clients per instance that send
// POST /v1/check for a few keys until stopped, each answer recorded in a History
// (tests/support/history.h) as the client saw it.
//
// A client classifies an answer: 200 with "backend_error" is a fail-open admission (on_error
// allow); 200 otherwise admitted; 429 denied; no answer within kFleetClientTimeout, no answer
// at all, or anything else (503 by on_error deny, 5xx) an error. Clients pace themselves
// (FleetOptions::pause between requests) so that the 2 cores also run the servers and Redis.
//
// Process faults: pause()/resume() (SIGSTOP/SIGCONT: a GC-like pause, the process keeps its
// leases and connections), kill() (SIGKILL). Clock faults: FleetOptions::fake_clock starts the
// instances under libfaketime (Debian's faketime package), each reading its offset from a file
// that set_clock_offset() rewrites (the wall clock only: FAKETIME_DONT_FAKE_MONOTONIC).
//
// Units: milliseconds. Thread safety: none (one test thread drives it; the clients are its own
// threads). Destroyed: clients stopped, then the servers (SIGTERM), then the proxies.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fault_proxy.h"
#include "tests/support/history.h"
#include "tests/support/process.h"

namespace spillway::testing {

inline constexpr std::chrono::seconds kFleetClientTimeout{20};

struct FleetOptions {
  int instances = 3;
  int clients_per_instance = 2;
  int keys = 4;
  std::string key_prefix;  // the keys are "<key_prefix>-<k>"; also names the temporary files
  // The backend URL; with proxy_port (one Redis), "redis://127.0.0.1:<proxy port>" per instance.
  std::string backend_url;
  std::uint16_t proxy_port = 0;  // 0: no proxies, every instance uses backend_url
  std::string on_error = "deny";
  std::string backend_lines;  // more lines of the backend section ("  durability: replicated\n")
  std::string layer = "  - {name: key, key: [api_key], algorithm: gcra, limit: 20/min}\n";
  std::chrono::milliseconds backend_timeout{1000};
  std::chrono::milliseconds pause{5};  // each client, between its requests
  bool fake_clock = false;
};

class FaultFleet {
 public:
  // Starts the instances and waits until each listens; throws std::runtime_error with the logs
  // when one does not.
  explicit FaultFleet(FleetOptions options);
  ~FaultFleet();
  FaultFleet(const FaultFleet&) = delete;
  FaultFleet& operator=(const FaultFleet&) = delete;

  int size() const { return static_cast<int>(servers_.size()); }
  FaultProxy& proxy(int instance) { return *proxies_.at(static_cast<std::size_t>(instance)); }
  ServeProcess& server(int instance) { return *servers_.at(static_cast<std::size_t>(instance)); }
  std::string key(int k) const { return options_.key_prefix + "-" + std::to_string(k); }

  // The clients: start sending, and stop (joins them; a client waiting on an answer finishes
  // that request first, at most kFleetClientTimeout).
  void start_clients();
  void stop_clients();
  const History& history() const { return history_; }
  // Whether each of `instances` (empty: every instance) answered a decision (admitted or
  // denied) to a request sent after `since`.
  bool decided_since(HistoryClock::time_point since, std::vector<int> instances = {}) const;

  // The clients' pause between requests from now on (FleetOptions::pause at first).
  void set_pause(std::chrono::milliseconds pause) { pause_ms_ = pause.count(); }

  void pause(int instance);
  void resume(int instance);
  void kill(int instance);
  // fake_clock only: the instance's wall clock is `offset` away from the real one from now on.
  void set_clock_offset(int instance, std::chrono::seconds offset);

  // Every instance's log, for failure messages.
  std::string logs() const;

 private:
  void client(int instance, int index);
  std::string clock_file(int instance) const;

  FleetOptions options_;
  std::vector<std::unique_ptr<FaultProxy>> proxies_;
  std::vector<std::unique_ptr<ServeProcess>> servers_;
  std::deque<std::atomic<bool>> killed_;  // read by the clients
  History history_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> pause_ms_;  // read by the clients
  std::vector<std::thread> clients_;
};

// The fault table's row for one run: printed, and appended to the file SPILLWAY_FAULT_TABLE names
// (scripts/soak.sh, docs/reliability.md) when set. Columns: fault, backend, mode, requests,
// admitted, over the bound, fail-open, errors, recovery (ms).
void record_fault_row(const std::string& fault, const std::string& backend, const std::string& mode,
                      const HistoryReport& report);

// How long a fault test sends traffic in each phase: `base`, times SPILLWAY_SOAK_SCALE (a whole
// number, default 1) when scripts/soak.sh runs the suite longer.
std::chrono::milliseconds soak_scaled(std::chrono::milliseconds base);

}  // namespace spillway::testing
