#include "fuzz/url_check.h"

#include <string>
#include <string_view>

#include "fuzz/check_util.h"
#include "src/cli/http_client.h"
#include "src/redis/url.h"

namespace spillway::fuzz {
namespace {

using redis::ClientOptions;

void check_error(const Error& error) {
  if (error.code != Errc::kInvalidArgument) violated("URL error is not invalid_argument");
  if (error.message.empty() || !error.message.starts_with("redis")) {
    violated("URL error does not start with \"redis\"", error.message);
  }
  if (error.message.find_first_of("\r\n") != std::string::npos) {
    violated("URL error is more than one line", error.message);
  }
}

void check_node(const ClientOptions& options, bool tls, std::string_view url) {
  if (options.unix_socket.empty() && options.host.empty()) violated("URL without a host", url);
  if (options.unix_socket.empty() && options.port == 0) violated("URL with port 0", url);
  if (options.tls.has_value() != tls) violated("TLS settings do not follow the scheme", url);
  if (options.db < 0) violated("negative db", url);
}

template <typename T>
bool same(const Result<T>& a, const Result<T>& b) {
  if (a.has_value() != b.has_value()) return false;
  return a ? true : a.error().message == b.error().message;
}

// The command line's http:// URLs (bench --http, --admin): a parse names a host, a port 1 to
// 65535 in digits and a path from "/"; an error is one line.
void check_http_url(const std::string& url) {
  for (std::string_view default_port : {"80", ""}) {
    const Result<cli::HttpUrl> parsed = cli::parse_http_url(url, default_port);
    if (!same(parsed, cli::parse_http_url(url, default_port))) {
      violated("parse_http_url is not deterministic", url);
    }
    if (!parsed) {
      if (parsed.error().code != Errc::kInvalidArgument || parsed.error().message.empty()) {
        violated("http URL error is not a named invalid_argument", url);
      }
      if (parsed.error().message.find_first_of("\r\n") != std::string::npos) {
        violated("http URL error is more than one line", parsed.error().message);
      }
      continue;
    }
    if (parsed->host.empty()) violated("http URL without a host", url);
    if (parsed->port.empty() || parsed->port.size() > 5 ||
        parsed->port.find_first_not_of("0123456789") != std::string::npos) {
      violated("http URL with a port that is not digits", url);
    }
    if (!parsed->path.starts_with('/')) violated("http URL path not from /", url);
  }
}

}  // namespace

void check_url_input(const std::uint8_t* data, std::size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  check_http_url(url);

  const Result<ClientOptions> one = redis::parse_redis_url(url);
  if (!same(one, redis::parse_redis_url(url))) violated("parse_redis_url is not deterministic");
  if (one) {
    check_node(*one, url.starts_with("rediss://"), url);
  } else {
    check_error(one.error());
  }

  const Result<redis::ClusterUrl> cluster = redis::parse_cluster_url(url);
  if (!same(cluster, redis::parse_cluster_url(url))) {
    violated("parse_cluster_url is not deterministic");
  }
  if (cluster) {
    if (cluster->seeds.empty()) violated("cluster URL without seeds", url);
    for (const redis::NodeAddress& seed : cluster->seeds) {
      if (seed.host.empty() || seed.port == 0) violated("cluster seed without host or port", url);
    }
    check_node(cluster->node_options, url.starts_with("rediss+cluster://"), url);
  } else {
    check_error(cluster.error());
  }

  const Result<redis::SentinelUrl> sentinel = redis::parse_sentinel_url(url);
  if (!same(sentinel, redis::parse_sentinel_url(url))) {
    violated("parse_sentinel_url is not deterministic");
  }
  if (sentinel) {
    if (sentinel->sentinels.empty()) violated("sentinel URL without sentinels", url);
    for (const redis::NodeAddress& node : sentinel->sentinels) {
      if (node.host.empty() || node.port == 0) violated("sentinel without host or port", url);
    }
    if (sentinel->master_name.empty() || sentinel->master_name.find('/') != std::string::npos) {
      violated("sentinel URL with a bad primary name", url);
    }
    if (sentinel->node_options.tls) violated("sentinel URL with TLS settings", url);
  } else {
    check_error(sentinel.error());
  }
}

}  // namespace spillway::fuzz
