// parse_redis_url (see url.h): the redis:// and unix:// forms, percent-decoding of user and
// password, and the checks on port and db. Pure functions; thread-safe.
#include "src/redis/url.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>

#include "src/core/backend_schemes.h"
#include "src/core/text.h"

namespace spillway::redis {
namespace {

// Every error of this file: the URL's own bytes are quoted in them, so control characters are
// escaped (an error stays one printable line).
std::unexpected<Error> url_error(const std::string& message) {
  return invalid_argument(escape_control(message, false));
}

Result<std::string> percent_decode(std::string_view text, std::string_view part) {
  std::optional<std::string> decoded = percent_decoded(text);
  if (!decoded) return url_error("redis URL: bad percent escape in " + std::string(part));
  return std::move(*decoded);
}

template <typename Int>
bool parse_digits(std::string_view text, Int& value) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Result<std::uint16_t> parse_port(std::string_view text) {
  unsigned long long value = 0;
  const bool all_digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; });
  if (!all_digits) {
    return url_error("redis URL: port '" + std::string(text) + "' is not a number");
  }
  if (!parse_digits(text, value) || value < 1 || value > 65535) {
    return url_error("redis URL: port " + std::string(text) + " is out of range (1-65535)");
  }
  return static_cast<std::uint16_t>(value);
}

Result<int> parse_db(std::string_view text) {
  int value = 0;
  if (!parse_digits(text, value)) {
    return url_error("redis URL: db '" + std::string(text) +
                     "' is not a number (expected 0, 1, 2, ...)");
  }
  return value;
}

// Calls `each(key, raw value)` for every "key=value" of a query string, in order, skipping empty
// items; stops at the first error.
template <typename Each>
Result<void> for_each_parameter(std::string_view query, Each each) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (Result<void> ok = each(item.substr(0, eq), value); !ok) return ok;
  }
  return {};
}

// "db=N&user=U&password=P" (unix:// URLs).
Result<void> parse_query(std::string_view query, ClientOptions& options) {
  return for_each_parameter(
      query, [&](std::string_view key, std::string_view value) -> Result<void> {
        if (key == "db") {
          Result<int> db = parse_db(value);
          if (!db) return std::unexpected(db.error());
          options.db = *db;
        } else if (key == "password" || key == "user") {
          Result<std::string> decoded = percent_decode(value, key);
          if (!decoded) return std::unexpected(decoded.error());
          (key == "password" ? options.password : options.user) = std::move(*decoded);
        } else {
          return url_error("redis URL: unknown parameter '" + std::string(key) +
                           "' (expected db, user or password)");
        }
        return {};
      });
}

Result<ClientOptions> parse_unix_url(std::string_view rest) {
  ClientOptions options;
  const std::size_t question = rest.find('?');
  const std::string_view path = rest.substr(0, question);
  if (path.empty() || path.front() != '/') {
    return url_error("redis URL: unix socket path must be absolute (unix:///path/to/sock)");
  }
  options.unix_socket = std::string(path);
  if (question != std::string_view::npos) {
    if (Result<void> parsed = parse_query(rest.substr(question + 1), options); !parsed) {
      return std::unexpected(parsed.error());
    }
  }
  return options;
}

// "tls_ca_file=…&tls_cert_file=…&tls_key_file=…&tls_server_name=…&tls_insecure=true".
Result<void> parse_tls_query(std::string_view query, TlsOptions& tls) {
  return for_each_parameter(query, [&](std::string_view key, std::string_view raw) -> Result<void> {
    Result<std::string> value = percent_decode(raw, key);
    if (!value) return std::unexpected(value.error());
    if (key == "tls_insecure") {
      if (*value != "true" && *value != "false" && *value != "1" && *value != "0") {
        return url_error("redis URL: tls_insecure must be true or false, got '" + *value + "'");
      }
      tls.insecure = *value == "true" || *value == "1";
      return {};
    }
    std::string* field = key == "tls_ca_file"       ? &tls.ca_file
                         : key == "tls_cert_file"   ? &tls.cert_file
                         : key == "tls_key_file"    ? &tls.key_file
                         : key == "tls_server_name" ? &tls.server_name
                                                    : nullptr;
    if (field == nullptr) {
      return url_error("redis URL: unknown parameter '" + std::string(key) +
                       "' (expected tls_ca_file, tls_cert_file, tls_key_file, "
                       "tls_server_name or tls_insecure)");
    }
    if (value->empty()) {
      return url_error("redis URL: " + std::string(key) + " is empty");
    }
    *field = std::move(*value);
    return {};
  });
}

// host:port[/db][?tls_…] after the scheme; `tls` for rediss (query parameters allowed).
Result<ClientOptions> parse_tcp_url(std::string_view rest, bool tls) {
  ClientOptions options;
  if (const std::size_t question = rest.find('?'); question != std::string_view::npos) {
    if (!tls) {
      return url_error(
          "redis URL: redis:// URLs take no query parameters (tls_* settings need rediss://)");
    }
    options.tls.emplace();
    if (Result<void> parsed = parse_tls_query(rest.substr(question + 1), *options.tls); !parsed) {
      return std::unexpected(parsed.error());
    }
    rest = rest.substr(0, question);
  } else if (tls) {
    options.tls.emplace();
  }
  // The last '@' ends the user info, so a raw '@' or '/' in a password still works.
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      return url_error(
          "redis URL: user info must be 'user:password@' or ':password@' (no ':' found)");
    }
    Result<std::string> user = percent_decode(userinfo.substr(0, colon), "user");
    if (!user) return std::unexpected(user.error());
    Result<std::string> password = percent_decode(userinfo.substr(colon + 1), "password");
    if (!password) return std::unexpected(password.error());
    if (!user->empty()) options.user = std::move(*user);
    if (!password->empty()) options.password = std::move(*password);
    if (options.user && !options.password) {
      return url_error("redis URL: user '" + *options.user + "' has no password");
    }
  }
  const std::size_t slash = rest.find('/');
  const std::string_view hostport = rest.substr(0, slash);
  std::string_view host;
  std::optional<std::string_view> port;
  if (!hostport.empty() && hostport.front() == '[') {  // [IPv6]:port
    const std::size_t close = hostport.find(']');
    if (close == std::string_view::npos) return url_error("redis URL: host lacks ']'");
    host = hostport.substr(1, close - 1);
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return url_error("redis URL: unexpected '" + std::string(after) + "' after host");
      }
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = hostport.find(':');
    host = hostport.substr(0, colon);
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (host.empty()) return url_error("redis URL: empty host");
  options.host = std::string(host);
  if (port) {
    Result<std::uint16_t> number = parse_port(*port);
    if (!number) return std::unexpected(number.error());
    options.port = *number;
  }
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      Result<int> number = parse_db(db);
      if (!number) return std::unexpected(number.error());
      options.db = *number;
    }
  }
  return options;
}

}  // namespace

Result<ClientOptions> parse_redis_url(std::string_view url) {
  const std::size_t separator = url.find("://");
  if (separator == std::string_view::npos) {
    return url_error("redis URL: missing scheme (expected redis://, rediss:// or unix://)");
  }
  const std::string_view scheme = url.substr(0, separator);
  const std::string_view rest = url.substr(separator + 3);
  if (const BackendScheme* known = find_backend_scheme(url)) {
    if (known->kind == BackendKind::kRedis) return parse_tcp_url(rest, known->tls);
    if (known->kind == BackendKind::kRedisUnix) return parse_unix_url(rest);
  }
  return url_error("redis URL: unknown scheme '" + std::string(scheme) +
                   "' (expected redis, rediss or unix)");
}

Result<ClusterUrl> parse_cluster_url(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  if (scheme == nullptr || scheme->kind != BackendKind::kRedisCluster) {
    return url_error("redis cluster URL: must start with redis+cluster:// or rediss+cluster://");
  }
  const bool tls = scheme->tls;
  std::string_view rest = url.substr(scheme->prefix.size());
  std::string query;  // "?tls_…", applied to every seed
  if (const std::size_t question = rest.find('?'); question != std::string_view::npos) {
    query = std::string(rest.substr(question));
    rest = rest.substr(0, question);
  }
  std::string userinfo;  // "user:password@", applied to every seed
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    userinfo = std::string(rest.substr(0, at + 1));
    rest = rest.substr(at + 1);
  }
  ClusterUrl out;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view seed = rest.substr(0, comma);
    if (seed.empty()) return url_error("redis cluster URL: an empty seed node");
    if (seed.find('/') != std::string_view::npos || seed.find('?') != std::string_view::npos) {
      return url_error("redis cluster URL: seed \"" + std::string(seed) +
                       "\" must be host:port (a cluster has only database 0)");
    }
    Result<ClientOptions> options = parse_tcp_url(userinfo + std::string(seed) + query, tls);
    if (!options) return std::unexpected(options.error());
    out.seeds.push_back({options->host, options->port});
    out.node_options = std::move(*options);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Result<SentinelUrl> parse_sentinel_url(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  if (scheme == nullptr || scheme->kind != BackendKind::kRedisSentinel) {
    return url_error("redis sentinel URL: must start with redis+sentinel://");
  }
  std::string_view rest = url.substr(scheme->prefix.size());
  std::string userinfo;  // "user:password@", for the primary
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    userinfo = std::string(rest.substr(0, at + 1));
    rest = rest.substr(at + 1);
  }
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    return url_error(
        "redis sentinel URL: the primary's name is missing "
        "(redis+sentinel://host:port,host:port/MASTER_NAME[/db])");
  }
  std::string_view hosts = rest.substr(0, slash);
  std::string_view path = rest.substr(slash + 1);
  SentinelUrl out;
  const std::size_t db_slash = path.find('/');
  out.master_name = std::string(path.substr(0, db_slash));
  if (out.master_name.empty()) return url_error("redis sentinel URL: empty primary name");
  if (out.master_name.find('?') != std::string::npos) {
    return url_error("redis sentinel URL: takes no query parameters");
  }
  std::string db_part;
  if (db_slash != std::string_view::npos) db_part = "/" + std::string(path.substr(db_slash + 1));
  while (true) {
    const std::size_t comma = hosts.find(',');
    std::string seed(hosts.substr(0, comma));
    if (seed.empty()) return url_error("redis sentinel URL: an empty sentinel address");
    const bool has_port = seed.front() == '[' ? seed.find("]:") != std::string::npos
                                              : seed.find(':') != std::string::npos;
    Result<ClientOptions> sentinel = parse_tcp_url(has_port ? seed : seed + ":26379", false);
    if (!sentinel) return std::unexpected(sentinel.error());
    out.sentinels.push_back({sentinel->host, sentinel->port});
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  // The primary's options: credentials and db (its host and port come from the sentinels).
  Result<ClientOptions> node = parse_tcp_url(userinfo + "primary" + db_part, false);
  if (!node) return std::unexpected(node.error());
  out.node_options = std::move(*node);
  return out;
}

}  // namespace spillway::redis
