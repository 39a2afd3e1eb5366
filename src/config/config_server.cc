// The config file's server section (see config.h for its fields).
#include <optional>
#include <string>
#include <tuple>

#include "src/config/config_sections.h"
#include "src/config/listen_address.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"

namespace spillway::policy {

void parse_server(const YAML::Node& node, ServerConfig& server) {
  if (node.IsNull()) return;
  expect_map(node, "server",
             "a mapping of listen, threads, trusted_proxies, client_ip_header, ipv6_prefix, "
             "access_log, log_format, grpc_listen, dashboard, dashboard_keys, unknown_attributes, "
             "admin_listen, admin_token_file, reservation_ttl, max_reservations, max_delayed, "
             "max_connections_per_peer, admin_max_connections_per_peer, tls");
  Fields fields(
      node, "server",
      {"listen", "threads", "trusted_proxies", "ipv6_prefix", "access_log", "log_format",
       "grpc_listen", "dashboard", "dashboard_keys", "unknown_attributes", "client_ip_header",
       "admin_listen", "admin_token_file", "reservation_ttl", "max_reservations", "max_delayed",
       "max_connections_per_peer", "admin_max_connections_per_peer", "tls"});
  // A listen address: host:port, checked as --listen is.
  const auto read_address = [&](const char* name, std::string& out) {
    const Entry* entry = fields.find(name);
    if (entry == nullptr) return;
    collect([&] {
      const std::string path = fields.path(name);
      const std::string text = scalar(entry->value, path, "host:port");
      Result<ListenAddress> address = parse_listen_address(text);
      if (!address) fail(entry->value, path, address.error().message);
      out = text;
    });
  };
  read_address("admin_listen", server.admin_listen);
  if (const Entry* token = fields.find("admin_token_file"))
    collect([&] {
      server.admin_token_file =
          non_empty_scalar(token->value, fields.path("admin_token_file"), "a file path");
    });
  collect([&] {
    using enum ClientIpHeader;
    read_choice(fields, "client_ip_header",
                {{client_ip_header_name(kXForwardedFor), kXForwardedFor},
                 {client_ip_header_name(kForwarded), kForwarded},
                 {client_ip_header_name(kXRealIp), kXRealIp}},
                server.client_ip_header, {.any_case = true});
  });
  collect([&] {
    read_choice(fields, "unknown_attributes", {{"reject", true}, {"ignore", false}},
                server.reject_unknown_attributes);
  });
  if (const Entry* ttl = fields.find("reservation_ttl"))
    collect([&] {
      const std::string path = fields.path("reservation_ttl");
      server.reservation_ttl = millis(*ttl, path);
      if (server.reservation_ttl.count() <= 0 ||
          server.reservation_ttl > std::chrono::hours(24 * 7)) {
        fail(ttl->value, path, "must be above 0 and at most 7d");
      }
    });
  if (const Entry* max = fields.find("max_reservations"))
    collect([&] {
      // 100 million open reservations are tens of GB: a larger number is a typo.
      server.max_reservations =
          whole_number(max->value, fields.path("max_reservations"), 1, 100'000'000);
    });
  if (const Entry* max = fields.find("max_delayed"))
    collect([&] {
      // Each held answer is an open connection from the proxy: a million is past any proxy's.
      server.max_delayed = whole_number(max->value, fields.path("max_delayed"), 0, 1'000'000);
    });
  if (const Entry* dashboard = fields.find("dashboard"))
    collect([&] { server.dashboard = boolean(dashboard->value, fields.path("dashboard")); });
  collect([&] {
    read_choice(fields, "dashboard_keys", {{"masked", true}, {"clear", false}},
                server.dashboard_mask_keys);
  });
  read_address("grpc_listen", server.grpc_listen);
  read_address("listen", server.listen);
  if (const Entry* threads = fields.find("threads"))
    collect([&] {
      server.threads =
          static_cast<int>(whole_number(threads->value, fields.path("threads"), 1, 256));
    });
  if (const Entry* proxies = fields.find("trusted_proxies"))
    collect([&] {
      const std::string path = fields.path("trusted_proxies");
      if (!proxies->value.IsNull()) {
        if (!proxies->value.IsSequence()) {
          fail(proxies->value, path,
               "must be a list of CIDRs such as [10.0.0.0/8], not " +
                   std::string(kind_of(proxies->value)));
        }
        for (std::size_t i = 0; i < proxies->value.size(); ++i) {
          collect([&] {
            const YAML::Node item = proxies->value[i];
            const std::string item_path = path + "[" + std::to_string(i) + "]";
            Result<Cidr> cidr = parse_cidr(scalar(item, item_path, "a CIDR such as 10.0.0.0/8"));
            if (!cidr) fail(item, item_path, cidr.error().message);
            server.trusted_proxies.push_back(*cidr);
          });
        }
      }
    });
  if (const Entry* prefix = fields.find("ipv6_prefix"))
    collect([&] {
      server.ipv6_prefix =
          static_cast<int>(whole_number(prefix->value, fields.path("ipv6_prefix"), 1, 128));
    });
  for (auto [name, out, min, max] :
       {std::tuple{"max_connections_per_peer", &server.max_connections_per_peer, 0, 10000},
        std::tuple{"admin_max_connections_per_peer", &server.admin_max_connections_per_peer, 1,
                   64}}) {
    if (const Entry* cap = fields.find(name))
      collect([&] {
        *out = static_cast<std::size_t>(whole_number(cap->value, fields.path(name), min, max));
      });
  }
  if (const Entry* tls = fields.find("tls"))
    collect([&] {
      const std::string path = fields.path("tls");
      expect_map(tls->value, path, "a mapping of cert_file, key_file, client_ca_file");
      Fields tls_fields(tls->value, path, {"cert_file", "key_file", "client_ca_file"});
      ServerTlsConfig& out = server.tls.emplace();
      for (auto [name, field] :
           {std::pair{"cert_file", &out.cert_file}, std::pair{"key_file", &out.key_file},
            std::pair{"client_ca_file", &out.client_ca_file}}) {
        if (const Entry* entry = tls_fields.find(name))
          collect([&] {
            *field = non_empty_scalar(entry->value, tls_fields.path(name), "a file path");
          });
      }
      const bool missing =
          tls_fields.find("cert_file") == nullptr || tls_fields.find("key_file") == nullptr;
      // Nothing half-read for the checks after the parse to load again (and say again).
      if (missing || out.cert_file.empty() || out.key_file.empty()) server.tls.reset();
      if (missing) {
        fail(tls->value, path, "needs cert_file and key_file");
      }
    });
  if (const Entry* log = fields.find("access_log"))
    collect([&] { server.access_log = boolean(log->value, fields.path("access_log")); });
  collect([&] {
    read_choice(fields, "log_format", {{"text", false}, {"json", true}}, server.log_json);
  });
}

}  // namespace spillway::policy
