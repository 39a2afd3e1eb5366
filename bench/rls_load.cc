// A load generator for the gRPC rate limit service (bench/compare_grpc.sh): keeps N calls in
// flight with grpc++'s callback client API and prints what came back.
//   rls_load HOST:PORT DOMAIN KEY VALUES IN_FLIGHT SECONDS
// Each call asks about one descriptor {KEY: v<i>}, i cycling over VALUES values. Prints
//   calls_per_second=… ok=… over_limit=… errors=… p50_us=… p99_us=…
// Exit 1 when any call failed.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

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
  int running = 0;
  std::vector<std::vector<std::int64_t>> latencies;  // per slot, µs
};

struct Slot {
  Load* load;
  int index;
  pb::RateLimitRequest request;
  pb::RateLimitResponse response;
  std::unique_ptr<grpc::ClientContext> context;
  Clock::time_point started;

  void send() {
    const long n = load->next.fetch_add(1);
    request.Clear();
    request.set_domain(load->domain);
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(load->key);
    entry->set_value("v" + std::to_string(n % load->values));
    response.Clear();
    context = std::make_unique<grpc::ClientContext>();
    started = Clock::now();
    load->stub->async()->ShouldRateLimit(context.get(), &request, &response,
                                         [this](grpc::Status status) { finished(status); });
  }

  void finished(const grpc::Status& status) {
    const Clock::time_point now = Clock::now();
    load->latencies[static_cast<std::size_t>(index)].push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(now - started).count());
    if (!status.ok()) {
      load->errors.fetch_add(1);
    } else if (response.overall_code() == pb::RateLimitResponse::OK) {
      load->ok.fetch_add(1);
    } else {
      load->over.fetch_add(1);
    }
    if (now < load->end) return send();
    std::lock_guard lock(load->mutex);
    if (--load->running == 0) load->done_cv.notify_all();
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: rls_load HOST:PORT DOMAIN KEY VALUES IN_FLIGHT SECONDS\n");
    return 2;
  }
  auto channel = grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials());
  auto stub = pb::RateLimitService::NewStub(channel);
  const int in_flight = std::max(1, std::atoi(argv[5]));
  const int seconds = std::max(1, std::atoi(argv[6]));
  Load load;
  load.stub = stub.get();
  load.domain = argv[2];
  load.key = argv[3];
  load.values = std::max(1, std::atoi(argv[4]));
  load.latencies.resize(static_cast<std::size_t>(in_flight));
  const Clock::time_point start = Clock::now();
  load.end = start + std::chrono::seconds(seconds);
  std::vector<Slot> slots(static_cast<std::size_t>(in_flight));
  load.running = in_flight;
  for (int i = 0; i < in_flight; ++i) {
    slots[static_cast<std::size_t>(i)].load = &load;
    slots[static_cast<std::size_t>(i)].index = i;
  }
  for (Slot& slot : slots) slot.send();
  {
    std::unique_lock lock(load.mutex);
    load.done_cv.wait(lock, [&] { return load.running == 0; });
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<std::int64_t> all;
  for (const auto& l : load.latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double p) {
    return all.empty() ? 0
                       : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))];
  };
  const long calls = load.ok + load.over + load.errors;
  std::printf("calls_per_second=%.0f ok=%ld over_limit=%ld errors=%ld p50_us=%lld p99_us=%lld\n",
              static_cast<double>(calls) / took, load.ok.load(), load.over.load(),
              load.errors.load(), static_cast<long long>(pct(0.5)),
              static_cast<long long>(pct(0.99)));
  return load.errors > 0 ? 1 : 0;
}
