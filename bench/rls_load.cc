// A load generator for the gRPC rate limit service (bench/compare_grpc.sh, bench/latency.sh):
// grpc++'s callback client API.
//   rls_load HOST:PORT DOMAIN KEY VALUES IN_FLIGHT SECONDS [RATE]
// Closed loop: IN_FLIGHT calls kept in flight, each answer sends the next. Open loop (RATE
// calls/s): one thread sends the calls on a schedule, at most IN_FLIGHT at once (a call due while
// all are in flight waits for one to end), and each latency counts from the call's scheduled time.
// Each call asks about one descriptor {KEY: v<i>}, i cycling over VALUES values. Prints
//   calls_per_second=… ok=… over_limit=… errors=… p50_us=… p99_us=… p999_us=… max_us=…
// Exit 1 when any call failed, 2 (naming the argument) when an argument is not what it must be.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "src/cli/latency_histogram.h"
#include "src/cli/schedule_wait.h"

namespace pb = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

namespace {

struct Load {
  pb::RateLimitService::Stub* stub;
  std::string domain, key;
  int values;
  Clock::time_point end;
  std::atomic<long> next{0}, ok{0}, over{0}, errors{0};
  std::mutex mutex;
  std::condition_variable done_cv;
  int running = 0;  // closed loop: slots still sending
  bool open_loop = false;
  std::vector<int> free_slots;                // open loop: slots not in flight
  spillway::cli::LatencyHistogram latencies;  // ns, under mutex
};

struct Slot {
  Load* load;
  int index;
  pb::RateLimitRequest request;
  pb::RateLimitResponse response;
  std::unique_ptr<grpc::ClientContext> context;
  Clock::time_point started;  // when the call was due (open loop) or sent (closed loop)

  void send() {
    const long n = load->next.fetch_add(1);
    request.Clear();
    request.set_domain(load->domain);
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(load->key);
    entry->set_value("v" + std::to_string(n % load->values));
    response.Clear();
    context = std::make_unique<grpc::ClientContext>();
    if (!load->open_loop) started = Clock::now();
    load->stub->async()->ShouldRateLimit(context.get(), &request, &response,
                                         [this](grpc::Status status) { finished(status); });
  }

  void finished(const grpc::Status& status) {
    const Clock::time_point now = Clock::now();
    if (!status.ok()) {
      if (load->errors.fetch_add(1) == 0) {
        std::fprintf(stderr, "rls_load: first error: %s\n", status.error_message().c_str());
      }
    } else if (response.overall_code() == pb::RateLimitResponse::OK) {
      load->ok.fetch_add(1);
    } else {
      load->over.fetch_add(1);
    }
    bool send_next = false;
    {
      std::lock_guard lock(load->mutex);
      load->latencies.record(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count());
      if (load->open_loop) {
        load->free_slots.push_back(index);
        load->done_cv.notify_all();
        return;
      }
      send_next = now < load->end;
      if (!send_next && --load->running == 0) load->done_cv.notify_all();
    }
    if (send_next) send();
  }
};

// Open loop: the calls due until `end`, each on a free slot (waiting for one if all are busy).
void run_scheduled(Load& load, std::vector<Slot>& slots, double rate, Clock::time_point start) {
  const auto interval =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate));
  for (Clock::time_point due = start; due < load.end; due += interval) {
    spillway::cli::wait_until(due);
    int slot = 0;
    {
      std::unique_lock lock(load.mutex);
      load.done_cv.wait(lock, [&] { return !load.free_slots.empty(); });
      slot = load.free_slots.back();
      load.free_slots.pop_back();
    }
    slots[static_cast<std::size_t>(slot)].started = due;
    slots[static_cast<std::size_t>(slot)].send();
  }
  std::unique_lock lock(load.mutex);
  load.done_cv.wait(lock, [&] { return load.free_slots.size() == slots.size(); });
}

// A whole number from 1 to `most`, or nothing (after a line on stderr naming the argument).
std::optional<int> whole(const char* name, const char* text, int most) {
  int value = 0;
  const std::string_view view(text);
  const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (ec == std::errc() && end == view.data() + view.size() && value >= 1 && value <= most) {
    return value;
  }
  std::fprintf(stderr, "rls_load: %s \"%s\" must be a whole number from 1 to %d\n", name, text,
               most);
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: rls_load HOST:PORT DOMAIN KEY VALUES IN_FLIGHT SECONDS [RATE]\n");
    return 2;
  }
  const std::optional<int> values = whole("VALUES", argv[4], 100'000'000);
  const std::optional<int> in_flight = whole("IN_FLIGHT", argv[5], 100'000);
  const std::optional<int> seconds = whole("SECONDS", argv[6], 86'400);
  const std::optional<int> rate = argc == 8 ? whole("RATE", argv[7], 100'000'000) : 0;
  if (!values || !in_flight || !seconds || !rate) return 2;
  auto channel = grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials());
  auto stub = pb::RateLimitService::NewStub(channel);
  Load load;
  load.stub = stub.get();
  load.domain = argv[2];
  load.key = argv[3];
  load.values = *values;
  load.open_loop = *rate > 0;
  const Clock::time_point start = Clock::now();
  load.end = start + std::chrono::seconds(*seconds);
  std::vector<Slot> slots(static_cast<std::size_t>(*in_flight));
  for (int i = 0; i < *in_flight; ++i) {
    slots[static_cast<std::size_t>(i)].load = &load;
    slots[static_cast<std::size_t>(i)].index = i;
    load.free_slots.push_back(i);
  }
  if (load.open_loop) {
    run_scheduled(load, slots, *rate, start);
  } else {
    load.running = *in_flight;
    for (Slot& slot : slots) slot.send();
    std::unique_lock lock(load.mutex);
    load.done_cv.wait(lock, [&] { return load.running == 0; });
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  const long calls = load.ok + load.over + load.errors;
  const auto us = [&](std::uint64_t ns) { return static_cast<double>(ns) / 1000; };
  std::printf(
      "calls_per_second=%.0f ok=%ld over_limit=%ld errors=%ld p50_us=%.1f p99_us=%.1f "
      "p999_us=%.1f max_us=%.1f\n",
      static_cast<double>(calls) / took, load.ok.load(), load.over.load(), load.errors.load(),
      us(load.latencies.at(0.5)), us(load.latencies.at(0.99)), us(load.latencies.at(0.999)),
      us(load.latencies.max()));
  return load.errors > 0 ? 1 : 0;
}
