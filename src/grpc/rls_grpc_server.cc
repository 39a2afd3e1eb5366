#include "src/grpc/rls_grpc_server.h"

#include <grpc/support/log.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "spillway/runtime.h"
#include "src/config/error_answer.h"
#include "src/core/json_writer.h"
#include "src/core/stopwatch.h"
#include "src/core/text.h"
#include "src/grpc/quota_grpc_service.h"
#include "src/grpc/rls_convert.h"
#include "src/server/access_log.h"
#include "src/server/decision_log_fields.h"
#include "src/server/trace_context.h"

namespace spillway::grpc_server {
namespace {

// gRPC core's own log lines (gpr_log), routed through spillway's: one line each on stderr,
// "spillway: gRPC <severity>: <message>" with the message on one line. While a server starts,
// they are kept instead (`capture`), to explain a failure in the caller's one line.
std::mutex grpc_log_mutex;
std::vector<std::string>* grpc_log_capture = nullptr;  // guarded by grpc_log_mutex

std::string one_line(const char* message) {
  std::string text = message == nullptr ? "" : message;
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

void log_through_spillway(gpr_log_func_args* args) {
  std::string message = one_line(args->message);
  {
    std::lock_guard lock(grpc_log_mutex);
    if (grpc_log_capture != nullptr) {
      grpc_log_capture->push_back(std::move(message));
      return;
    }
  }
  const std::string line = "spillway: gRPC " +
                           std::string(gpr_log_severity_string(args->severity)) + ": " + message +
                           "\n";
  (void)!::write(2, line.data(), line.size());  // one write(2): lines never interleave
}

// Keeps gRPC's log lines for as long as it lives (one server start).
class CaptureGrpcLog {
 public:
  CaptureGrpcLog() {
    std::lock_guard lock(grpc_log_mutex);
    grpc_log_capture = &lines_;
  }
  ~CaptureGrpcLog() {
    std::lock_guard lock(grpc_log_mutex);
    grpc_log_capture = nullptr;
  }
  CaptureGrpcLog(const CaptureGrpcLog&) = delete;
  CaptureGrpcLog& operator=(const CaptureGrpcLog&) = delete;

  // Why the listener could not bind, in a few words, from what gRPC logged.
  std::string reason() const {
    std::lock_guard lock(grpc_log_mutex);
    for (const std::string& line : lines_) {
      if (line.find("Address already in use") != std::string::npos) return "address in use";
      if (line.find("Cannot assign requested address") != std::string::npos) {
        return "not a local address";
      }
      if (line.find("Permission denied") != std::string::npos) return "permission denied";
    }
    return lines_.empty() ? "gRPC gave no reason" : lines_.front();
  }

 private:
  std::vector<std::string> lines_;  // guarded by grpc_log_mutex
};

// The name of a gRPC status code, as grpc/status.h spells it ("OK", "UNAVAILABLE").
std::string_view status_name(::grpc::StatusCode code) {
  static constexpr std::string_view kNames[] = {"OK",
                                                "CANCELLED",
                                                "UNKNOWN",
                                                "INVALID_ARGUMENT",
                                                "DEADLINE_EXCEEDED",
                                                "NOT_FOUND",
                                                "ALREADY_EXISTS",
                                                "PERMISSION_DENIED",
                                                "RESOURCE_EXHAUSTED",
                                                "FAILED_PRECONDITION",
                                                "ABORTED",
                                                "OUT_OF_RANGE",
                                                "UNIMPLEMENTED",
                                                "INTERNAL",
                                                "UNAVAILABLE",
                                                "DATA_LOSS",
                                                "UNAUTHENTICATED"};
  const auto index = static_cast<std::size_t>(code);
  return index < std::size(kNames) ? kNames[index] : "UNKNOWN";
}

// The client's address as the HTTP access log shows a peer: gRPC's "ipv4:127.0.0.1:5000" is
// "127.0.0.1", "ipv6:[::1]:5000" (or "ipv6:%5B::1%5D:5000") is "::1"; anything else as gRPC
// wrote it.
std::string peer_address(std::string_view peer) {
  std::string address;
  if (peer.starts_with("ipv4:") || peer.starts_with("ipv6:")) {
    address = percent_decoded(peer.substr(5)).value_or(std::string(peer.substr(5)));
    if (const std::size_t colon = address.rfind(':'); colon != std::string::npos) {
      address.resize(colon);  // the port
    }
    if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
      address = address.substr(1, address.size() - 2);
    }
    return address;
  }
  return std::string(peer);
}

// What one call's access log line knows before the call is decided.
struct CallLog {
  std::string peer;
  std::string domain;    // a domain of the rules in force, or "other"
  std::string trace_id;  // empty: no valid traceparent
};

class RateLimitService final : public pb::RateLimitService::CallbackService {
 public:
  // `log`: where each call's access log line goes; null: no lines.
  RateLimitService(rls::RlsEngine& engine, GrpcMetrics& metrics, policy::RlsOnError on_error,
                   server::AccessLog* log)
      : engine_(engine), metrics_(metrics), on_error_(on_error), log_(log) {}

  ::grpc::ServerUnaryReactor* ShouldRateLimit(::grpc::CallbackServerContext* context,
                                              const pb::RateLimitRequest* request,
                                              pb::RateLimitResponse* response) override {
    ::grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const Stopwatch started;
    const std::size_t descriptors = static_cast<std::size_t>(request->descriptors_size());
    std::shared_ptr<const CallLog> log;
    if (log_ != nullptr) log = call_log(*context, request->domain());
    engine_.should_rate_limit(from_proto(*request), [this, reactor, response, started, descriptors,
                                                     log](Result<rls::RlsResponse> result) {
      ::grpc::Status status = answer(result, descriptors, *response);
      const std::int64_t us = started.elapsed().count();
      metrics_.call(static_cast<int>(status.error_code()), us);
      if (log) write_log(*log, status, result, descriptors, us);
      reactor->Finish(status);
    });
    return reactor;
  }

 private:
  std::shared_ptr<const CallLog> call_log(const ::grpc::CallbackServerContext& context,
                                          const std::string& domain) const {
    auto log = std::make_shared<CallLog>();
    log->peer = peer_address(context.peer());
    // A domain no rule names is the caller's own text: not written.
    const std::shared_ptr<const rls::RlsRules> rules = engine_.rules();
    log->domain = rules != nullptr && rules->domains.contains(domain) ? domain : "other";
    const auto& metadata = context.client_metadata();
    if (auto found = metadata.find("traceparent"); found != metadata.end()) {
      const std::string_view value(found->second.data(), found->second.size());
      if (std::optional<std::string> id = server::trace_id_of(value)) log->trace_id = *id;
    }
    return log;
  }

  // The call's access log line (the members of its JSON object; AccessLog adds ts and level).
  void write_log(const CallLog& log, const ::grpc::Status& status,
                 const Result<rls::RlsResponse>& result, std::size_t descriptors,
                 std::int64_t us) const {
    std::string line;
    JsonWriter json = JsonWriter::in_object(line, false);
    json.member("msg", "request")
        .member("protocol", "grpc")
        .member("method", "POST")
        .member("path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
        .member("grpc_status", status_name(status.error_code()))
        .member("latency_us", us)
        .member("peer", utf8_or_escaped(log.peer))
        .member("domain", utf8_or_escaped(log.domain))
        .member("descriptors", descriptors);
    if (result) {
      std::size_t over = 0;
      for (const rls::DescriptorStatus& d : result->statuses) {
        over += d.code == rls::Code::kOverLimit ? 1 : 0;
      }
      json.member("allowed", result->overall_code != rls::Code::kOverLimit)
          .member("over_limit", over);
    } else if (const policy::ErrorAnswer answer = policy::answer_error(result.error(), on_error_);
               answer == policy::ErrorAnswer::kFail) {
      json.member("backend_error", errc_name(result.error().code));
    } else if (answer != policy::ErrorAnswer::kInvalid) {
      json.members(
          server::backend_error_log_fields(result.error(), answer == policy::ErrorAnswer::kAllow));
    }
    if (!log.trace_id.empty()) json.member("trace_id", log.trace_id);
    log_->write(line);
  }

  ::grpc::Status answer(const Result<rls::RlsResponse>& result, std::size_t descriptors,
                        pb::RateLimitResponse& response) const {
    if (result) {
      to_proto(*result, response);
      return ::grpc::Status::OK;
    }
    const Error& error = result.error();
    const policy::ErrorAnswer answer = policy::answer_error(error, on_error_);
    if (answer == policy::ErrorAnswer::kInvalid) {
      return {::grpc::StatusCode::INVALID_ARGUMENT, error.message};
    }
    if (answer == policy::ErrorAnswer::kFail) {
      return {error.code == Errc::kTimeout ? ::grpc::StatusCode::DEADLINE_EXCEEDED
                                           : ::grpc::StatusCode::UNAVAILABLE,
              "backend: " + error.message};
    }
    // on_error allow / deny: an answer for every descriptor, with no limit.
    rls::RlsResponse fallback;
    const rls::Code code =
        answer == policy::ErrorAnswer::kAllow ? rls::Code::kOk : rls::Code::kOverLimit;
    fallback.overall_code = code;
    fallback.statuses.assign(descriptors, rls::DescriptorStatus{.code = code});
    to_proto(fallback, response);
    return ::grpc::Status::OK;
  }

  rls::RlsEngine& engine_;
  GrpcMetrics& metrics_;
  const policy::RlsOnError on_error_;
  server::AccessLog* const log_;
};

// A whole PEM file, or an error naming the server.tls field and the file.
Result<std::string> read_pem(std::string_view field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return invalid_argument("server.tls: " + std::string(field) + " \"" + path +
                            "\" cannot be read for the gRPC listener");
  }
  if (text.empty()) {
    return invalid_argument("server.tls: " + std::string(field) + " \"" + path +
                            "\" is empty or cannot be read for the gRPC listener");
  }
  return text;
}

// server.tls for gRPC: the certificate and key, and with client_ca_file a client certificate
// that chains to it is required.
Result<std::shared_ptr<::grpc::ServerCredentials>> tls_credentials(
    const policy::ServerTlsConfig& tls) {
  auto cert = read_pem("cert_file", tls.cert_file);
  if (!cert) return std::unexpected(cert.error());
  auto key = read_pem("key_file", tls.key_file);
  if (!key) return std::unexpected(key.error());
  ::grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({std::move(*key), std::move(*cert)});
  if (!tls.client_ca_file.empty()) {
    auto ca = read_pem("client_ca_file", tls.client_ca_file);
    if (!ca) return std::unexpected(ca.error());
    options.pem_root_certs = std::move(*ca);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return ::grpc::SslServerCredentials(options);
}

}  // namespace

struct RlsGrpcServer::Impl {
  // Each call's access log line (options.log_calls); declared first, so it goes last.
  std::unique_ptr<server::AccessLog> access_log;
  std::unique_ptr<RateLimitService> service;
  // Envoy's Rate Limit Quota Service beside it, on the same rules and store.
  std::unique_ptr<rls::QuotaService> quota;
  std::unique_ptr<::grpc::Service> quota_service;
  std::unique_ptr<::grpc::Server> server;
  int port = 0;
  // The health watch: sets SERVING / NOT_SERVING from `ready` every 500 ms until stopped; and
  // the flush of access_log's block of lines to stderr. Tasks on the process's runtime (`ready`
  // is a store's ready(): an atomic read, never a wait).
  std::function<bool()> ready;
  bool serving = true;  // the runtime's thread only, once the watch runs
  ScheduledTask health_watch;
  ScheduledTask log_flush;

  void set_health(bool up) {
    if (::grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService()) {
      health->SetServingStatus(up);  // "" and every service name
      health->SetServingStatus(pb::RateLimitService::service_full_name(), up);
      health->SetServingStatus(
          ::envoy::service::rate_limit_quota::v3::RateLimitQuotaService::service_full_name(), up);
    }
  }

  void watch_health() {
    const bool now = ready();
    if (now != serving) set_health(serving = now);
  }
};

RlsGrpcServer::RlsGrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RlsGrpcServer::~RlsGrpcServer() { stop(std::chrono::milliseconds(0)); }

void RlsGrpcServer::append_quota_metrics(std::string& out) const {
  impl_->quota->stats().render(out);
}

Result<std::unique_ptr<RlsGrpcServer>> RlsGrpcServer::start(const RlsGrpcOptions& options,
                                                            rls::RlsEngine& engine,
                                                            GrpcMetrics& metrics) {
  gpr_set_log_function(log_through_spillway);
  ::grpc::EnableDefaultHealthCheckService(true);
  ::grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  auto impl = std::make_unique<Impl>();
  if (options.log_calls) {
    impl->access_log = std::make_unique<server::AccessLog>(options.access_log, true);
  }
  impl->service =
      std::make_unique<RateLimitService>(engine, metrics, options.on_error, impl->access_log.get());
  impl->quota = std::make_unique<rls::QuotaService>(
      engine.store(), [&engine] { return engine.rules(); }, options.on_error,
      engine.options().clock, engine.options().tenants, options.quota_shares);
  impl->quota_service = make_quota_grpc_service(*impl->quota);
  const std::string host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  const std::string address = host + ":" + std::to_string(options.port);
  std::shared_ptr<::grpc::ServerCredentials> credentials = ::grpc::InsecureServerCredentials();
  if (options.tls) {
    auto made = tls_credentials(*options.tls);
    if (!made) return std::unexpected(made.error());
    credentials = std::move(*made);
  }
  ::grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.RegisterService(impl->quota_service.get());
  {
    CaptureGrpcLog log;
    impl->server = builder.BuildAndStart();
    if (!impl->server || impl->port == 0) {
      return std::unexpected(
          Error{Errc::kUnavailable, "cannot listen for gRPC on " + address + ": " + log.reason()});
    }
  }
  // Health by service name too (probes that name the service they check).
  impl->set_health(true);
  std::shared_ptr<Runtime> runtime = system_runtime();
  if (options.ready) {
    impl->ready = options.ready;
    impl->serving = impl->ready();
    impl->set_health(impl->serving);
    impl->health_watch = runtime->every(500'000, [raw = impl.get()] { raw->watch_health(); });
  }
  if (impl->access_log && impl->access_log->buffered()) {
    impl->log_flush =
        runtime->every(std::chrono::microseconds(server::AccessLog::kFlushInterval).count(),
                       [raw = impl.get()] { raw->access_log->flush(); });
  }
  return std::unique_ptr<RlsGrpcServer>(new RlsGrpcServer(std::move(impl)));
}

int RlsGrpcServer::port() const { return impl_->port; }

void RlsGrpcServer::stop(std::chrono::milliseconds grace) {
  if (!impl_ || !impl_->server) return;
  impl_->health_watch.cancel();  // each waits for a run under way
  impl_->log_flush.cancel();
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
  if (impl_->access_log) impl_->access_log->flush();  // the lines of the last calls
}

}  // namespace spillway::grpc_server
