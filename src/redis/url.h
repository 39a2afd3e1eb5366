// Redis URLs (backend.url, --backend) into the client's options. Pure function; thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/redis/client.h"
#include "src/redis/cluster_map.h"

namespace spillway::redis {

// Parses "redis://[user:password@]host[:port][/db]" (an IPv6 host in brackets), the same with
// rediss:// (TLS, with optional "?tls_ca_file=…&tls_cert_file=…&tls_key_file=…&tls_server_name=…
// &tls_insecure=true"), or
// "unix:///path/to/socket[?db=N&user=U&password=P]" into options (other fields keep their
// defaults); user and password may be percent-encoded. Errors name the part of the URL that is
// wrong.
Result<ClientOptions> parse_redis_url(std::string_view url);

// Parses "redis+cluster://[user:password@]host[:port][,host[:port]…]" (rediss+cluster:// with
// the same tls_* parameters for TLS): the seed nodes a cluster client learns the slot map from,
// and the options every node's client shares (credentials, TLS).
struct ClusterUrl {
  std::vector<NodeAddress> seeds;
  ClientOptions node_options;
};
Result<ClusterUrl> parse_cluster_url(std::string_view url);

// Parses "redis+sentinel://[user:password@]host[:port][,host[:port]…]/MASTER_NAME[/db]": the
// sentinels to ask (port default 26379), the name of the monitored primary, and the options of
// the primary's client (credentials and db; the sentinels are asked without credentials).
struct SentinelUrl {
  std::vector<NodeAddress> sentinels;
  std::string master_name;
  ClientOptions node_options;
};
Result<SentinelUrl> parse_sentinel_url(std::string_view url);

}  // namespace spillway::redis
