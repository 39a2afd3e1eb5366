// The gRPC listener with a C++ client (grpc++ generated stub): status codes for bad input and
// backend errors (and on_error), the conversion of every response field, and exact counting under
// concurrent calls. tests/grpc/*.test.mjs drive the same listener through `spillway serve` with
// another implementation's client (Node's @grpc/grpc-js).
#include "src/grpc/rls_grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "spillway/memory_store.h"

namespace spillway::grpc_server {
namespace {

namespace pb = ::envoy::service::ratelimit::v3;

constexpr Micros kStart = 1'700'000'040'000'000;  // any instant: windows are epoch-aligned

// A store that always fails with `code`: the backend is down.
class FailingStore final : public Store {
 public:
  explicit FailingStore(Errc code) : code_(code) {}
  void decide(const StoreRequest&, AllCallback done) override {
    done(std::unexpected(Error{code_, "redis 127.0.0.1:1: connection refused"}));
  }

 private:
  Errc code_;
};

std::shared_ptr<const rls::RlsRules> rules_from(std::string_view yaml) {
  auto domain = rls::parse_rls_yaml(yaml);
  EXPECT_TRUE(domain.has_value()) << domain.error().message;
  auto rules = std::make_shared<rls::RlsRules>();
  rules->domains.emplace(domain->domain, *domain);
  return rules;
}

constexpr std::string_view kRules = R"(
domain: cpp
descriptors:
  - key: user
    rate_limit:
      name: per_user
      unit: hour
      requests_per_unit: 50
)";

class Harness {
 public:
  Harness(Store& store, policy::RlsOnError on_error = policy::RlsOnError::kError,
          rls::ResponseHeaders headers = rls::ResponseHeaders::kOff)
      : clock_(std::make_shared<ManualClock>(kStart)),
        engine_(store, rules_from(kRules), {.response_headers = headers, .clock = clock_}) {
    auto server = RlsGrpcServer::start({.host = "127.0.0.1", .port = 0, .on_error = on_error},
                                       engine_, metrics_);
    EXPECT_TRUE(server.has_value()) << server.error().message;
    server_ = std::move(*server);
    channel_ = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                     ::grpc::InsecureChannelCredentials());
    stub_ = pb::RateLimitService::NewStub(channel_);
  }

  ::grpc::Status call(const pb::RateLimitRequest& request, pb::RateLimitResponse& response) {
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->ShouldRateLimit(&context, request, &response);
  }

  GrpcMetrics& metrics() { return metrics_; }

 private:
  std::shared_ptr<ManualClock> clock_;
  rls::RlsEngine engine_;
  GrpcMetrics metrics_;
  std::unique_ptr<RlsGrpcServer> server_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<pb::RateLimitService::Stub> stub_;
};

pb::RateLimitRequest user_request(const std::string& user, std::uint32_t hits = 0) {
  pb::RateLimitRequest request;
  request.set_domain("cpp");
  request.set_hits_addend(hits);
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key("user");
  entry->set_value(user);
  return request;
}

TEST(RlsGrpcServer, AnswersWithEveryFieldOfTheStatus) {
  MemoryStore store(MemoryStoreOptions{.clock = std::make_shared<ManualClock>(kStart)});
  Harness harness(store, policy::RlsOnError::kError, rls::ResponseHeaders::kDraft);
  pb::RateLimitResponse response;
  ASSERT_TRUE(harness.call(user_request("fields", 10), response).ok());
  EXPECT_EQ(response.overall_code(), pb::RateLimitResponse::OK);
  ASSERT_EQ(response.statuses_size(), 1);
  const auto& status = response.statuses(0);
  EXPECT_EQ(status.code(), pb::RateLimitResponse::OK);
  EXPECT_EQ(status.current_limit().name(), "per_user");
  EXPECT_EQ(status.current_limit().requests_per_unit(), 50u);
  EXPECT_EQ(status.current_limit().unit(), pb::RateLimitResponse::RateLimit::HOUR);
  EXPECT_EQ(status.limit_remaining(), 40u);
  // Fixed hour window: the reset is what is left of the hour at kStart.
  const Micros left = kMicrosPerHour - kStart % kMicrosPerHour;
  EXPECT_EQ(status.duration_until_reset().seconds(), left / kMicrosPerSecond);
  EXPECT_EQ(status.duration_until_reset().nanos(), (left % kMicrosPerSecond) * 1000);
  ASSERT_EQ(response.response_headers_to_add_size(), 3);
  EXPECT_EQ(response.response_headers_to_add(0).key(), "RateLimit-Limit");
  EXPECT_EQ(response.response_headers_to_add(0).value(), "50");
  EXPECT_EQ(response.response_headers_to_add(1).key(), "RateLimit-Remaining");
  EXPECT_EQ(response.response_headers_to_add(1).value(), "40");

  // Over the limit: 41 more do not fit in the 40 left.
  ASSERT_TRUE(harness.call(user_request("fields", 41), response = {}).ok());
  EXPECT_EQ(response.overall_code(), pb::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(0).code(), pb::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 40u);
}

TEST(RlsGrpcServer, BadInputIsInvalidArgumentNamingTheField) {
  MemoryStore store(MemoryStoreOptions{.clock = std::make_shared<ManualClock>(kStart)});
  Harness harness(store);
  pb::RateLimitResponse response;
  pb::RateLimitRequest no_domain = user_request("x");
  no_domain.clear_domain();
  ::grpc::Status status = harness.call(no_domain, response);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("domain"), std::string::npos) << status.error_message();

  pb::RateLimitRequest no_descriptors;
  no_descriptors.set_domain("cpp");
  status = harness.call(no_descriptors, response);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("descriptors"), std::string::npos);

  pb::RateLimitRequest empty_key = user_request("x");
  empty_key.mutable_descriptors(0)->mutable_entries(0)->clear_key();
  status = harness.call(empty_key, response);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("descriptors[0].entries[0].key"), std::string::npos)
      << status.error_message();

  // Nothing was charged by the bad calls, and the server still answers.
  ASSERT_TRUE(harness.call(user_request("x"), response = {}).ok());
  EXPECT_EQ(response.statuses(0).limit_remaining(), 49u);
}

TEST(RlsGrpcServer, BackendErrorsAreAStatusOrOnErrorsAnswer) {
  FailingStore down(Errc::kUnavailable);
  {
    Harness harness(down);
    pb::RateLimitResponse response;
    const ::grpc::Status status = harness.call(user_request("down"), response);
    EXPECT_EQ(status.error_code(), ::grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(status.error_message().find("connection refused"), std::string::npos);
  }
  FailingStore slow(Errc::kTimeout);
  {
    Harness harness(slow);
    pb::RateLimitResponse response;
    EXPECT_EQ(harness.call(user_request("slow"), response).error_code(),
              ::grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  {
    Harness harness(down, policy::RlsOnError::kAllow);
    pb::RateLimitResponse response;
    ASSERT_TRUE(harness.call(user_request("down"), response).ok());
    EXPECT_EQ(response.overall_code(), pb::RateLimitResponse::OK);
    ASSERT_EQ(response.statuses_size(), 1);
    EXPECT_FALSE(response.statuses(0).has_current_limit());
  }
  {
    Harness harness(down, policy::RlsOnError::kDeny);
    pb::RateLimitResponse response;
    ASSERT_TRUE(harness.call(user_request("down"), response).ok());
    EXPECT_EQ(response.overall_code(), pb::RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(response.statuses(0).code(), pb::RateLimitResponse::OVER_LIMIT);
  }
}

TEST(RlsGrpcServer, ConcurrentCallsAdmitExactlyTheLimit) {
  MemoryStore store(MemoryStoreOptions{.clock = std::make_shared<ManualClock>(kStart)});
  Harness harness(store);
  std::atomic<int> ok{0}, over{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        pb::RateLimitResponse response;
        if (!harness.call(user_request("race"), response).ok()) {
          ++failed;
        } else if (response.overall_code() == pb::RateLimitResponse::OK) {
          ++ok;
        } else {
          ++over;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), 50);
  EXPECT_EQ(over.load(), 150);
  std::string text;
  harness.metrics().render(text);
  EXPECT_NE(text.find("spillway_grpc_requests_total{method=\"ShouldRateLimit\",code=\"OK\"} 200"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace spillway::grpc_server
