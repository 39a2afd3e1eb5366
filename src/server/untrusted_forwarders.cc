#include "src/server/untrusted_forwarders.h"

#include <unistd.h>

#include <utility>

#include "src/core/metrics_text.h"

namespace spillway::server {

UntrustedForwarders::UntrustedForwarders(std::function<void(const std::string&)> log)
    : log_(std::move(log)) {}

void UntrustedForwarders::write(const std::string& line) const {
  if (log_) return log_(line);
  const std::string text = line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

void UntrustedForwarders::saw(std::string_view peer, std::string_view header) {
  count_.fetch_add(1, std::memory_order_relaxed);
  std::string line;
  {
    const std::lock_guard lock(mutex_);
    if (peers_.find(peer) != peers_.end()) return;
    if (peers_.size() >= kMaxPeers) {
      if (full_said_) return;
      full_said_ = true;
      line = "spillway: " + std::to_string(kMaxPeers) +
             " peers outside server.trusted_proxies have sent client-address headers; further "
             "ones are not named (spillway_untrusted_forwarded_total counts them all)";
    } else {
      peers_.emplace(peer);
      line = "spillway: " + std::string(peer) + " sent " + std::string(header) +
             " but is not in server.trusted_proxies: the header is ignored and its requests are "
             "keyed by its own address, so if it is a proxy every client behind it shares one "
             "budget; add it to server.trusted_proxies if it is yours (said once per peer; "
             "counted in spillway_untrusted_forwarded_total)";
    }
  }
  write(line);
}

void UntrustedForwarders::append_metrics(std::string& out) const {
  append_metric_family(out, "spillway_untrusted_forwarded_total", MetricType::kCounter,
                       "Requests to /v1/auth from a peer outside server.trusted_proxies that "
                       "carried a client-address header (ignored: keyed by the peer).");
  append_metric_sample(out, "spillway_untrusted_forwarded_total", {}, count());
}

}  // namespace spillway::server
