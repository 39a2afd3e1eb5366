// The gRPC listener of `spillway serve`: envoy.service.ratelimit.v3.RateLimitService (decided by
// an RlsEngine), envoy.service.rate_limit_quota.v3.RateLimitQuotaService on the same rules and
// store (src/grpc/quota_grpc_service.h, docs/SPEC.md §9.7), the standard grpc.health.v1.Health
// service (for "" and for the service's name: SERVING while `ready` says the backend can decide,
// NOT_SERVING otherwise, as GET /readyz; checked every 500 ms) and server reflection. Plain TCP on
// the given address (port 0: any free port), or TLS (grpc::SslServerCredentials) with options.tls,
// requiring a client certificate of its client_ca_file when one is set.
//
// Errors: bad input (no domain, no descriptors, empty keys…) is INVALID_ARGUMENT naming the
// field. A backend error is UNAVAILABLE (DEADLINE_EXCEEDED for a timeout) with the backend's
// message, so that Envoy's failure_mode_deny decides, unless on_error says allow (OK, no limit)
// or deny (every descriptor OVER_LIMIT).
//
// Logging: start() routes gRPC core's own log lines (gpr_log, process-wide) to stderr as single
// lines "spillway: gRPC ERROR: …"; an address it cannot bind is start()'s one error, "cannot
// listen for gRPC on HOST:PORT: address in use" (or the reason), with gRPC's lines folded in.
// With options.log_calls, each ShouldRateLimit call is one access log line, a JSON object as the
// HTTP listener's (src/server/access_log.h), written when the call is answered:
//   {"ts":…,"level":"info","msg":"request","protocol":"grpc","method":"POST",
//    "path":"/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit","grpc_status":"OK",
//    "latency_us":85,"peer":"127.0.0.1","domain":"edge","descriptors":2,"allowed":false,
//    "over_limit":1,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}
// `domain` is a domain of the rules in force, or "other"; a backend error adds backend_error (its
// kind) and, when rls.on_error answered, on_error; `trace_id` is that of a valid W3C
// `traceparent` in the call's metadata (src/server/trace_context.h), absent otherwise. No
// descriptor entry (a caller's key or address) is ever in the line. RLQS streams write none.
//
// Thread safety: the engine is called from gRPC's threads; stop() from one thread. Ownership:
// uses `engine` and `metrics`, which must outlive the server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "spillway/error.h"
#include "spillway/quota_shares.h"
#include "src/config/config.h"
#include "src/grpc/grpc_metrics.h"
#include "src/rls/rls_engine.h"

namespace spillway::grpc_server {

struct RlsGrpcOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  policy::RlsOnError on_error = policy::RlsOnError::kError;
  std::function<bool()> ready;  // e.g. the store's ready(); none: always SERVING
  // server.tls: the files are read at start (a restart takes new ones); none: plain TCP.
  std::optional<policy::ServerTlsConfig> tls;
  // Where RLQS streams' demands meet (every server of the backend); none: this process.
  std::shared_ptr<QuotaShares> quota_shares;
  // One JSON access log line per ShouldRateLimit call (server.access_log with server.log_format:
  // json); false: none.
  bool log_calls = false;
  // Where those lines go, one call per line (tests); none: stderr, in blocks flushed every
  // AccessLog::kFlushInterval.
  std::function<void(std::string_view)> access_log;
};

class RlsGrpcServer {
 public:
  static Result<std::unique_ptr<RlsGrpcServer>> start(const RlsGrpcOptions& options,
                                                      rls::RlsEngine& engine, GrpcMetrics& metrics);
  ~RlsGrpcServer();

  int port() const;
  // The RLQS per-bucket metrics (rls::QuotaStats), as Prometheus text appended to `out`.
  void append_quota_metrics(std::string& out) const;
  // Stops taking calls and waits up to `grace` for those running.
  void stop(std::chrono::milliseconds grace);

 private:
  struct Impl;
  explicit RlsGrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway::grpc_server
