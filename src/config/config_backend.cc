// The config file's backend section (see config.h for its fields), its TLS settings included.
#include <optional>
#include <string>
#include <utility>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/backend_schemes.h"
#include "src/core/text.h"

namespace spillway::policy {

namespace {

// key_hash and key_secret_file: a secret file alone means hmac-sha256; hmac-sha256 needs one, and
// the other modes refuse one (it would be silently unused).
void parse_key_hash_fields(const Fields& fields, BackendConfig& backend) {
  const Entry* hash = fields.find("key_hash");
  const Entry* secret = fields.find("key_secret_file");
  bool ok = true;
  if (hash != nullptr)
    ok &= collect([&] {
      read_choice(fields, "key_hash",
                  {{key_hash_name(KeyHash::kSha256), KeyHash::kSha256},
                   {key_hash_name(KeyHash::kHmacSha256), KeyHash::kHmacSha256},
                   {key_hash_name(KeyHash::kNone), KeyHash::kNone}},
                  backend.key_hash);
    });
  if (secret != nullptr)
    ok &= collect([&] {
      const std::string path = fields.path("key_secret_file");
      const std::string text = scalar(secret->value, path, "a file path");
      if (text.empty()) fail(secret->value, path, "must not be empty");
      backend.key_secret_file = text;
    });
  if (ok) {
    if (secret != nullptr && hash == nullptr) backend.key_hash = KeyHash::kHmacSha256;
    ok = collect([&] {
      if (backend.key_hash == KeyHash::kHmacSha256 && secret == nullptr) {
        fail(hash->value, fields.path("key_hash"),
             "hmac-sha256 needs backend.key_secret_file (a file of at least " +
                 std::to_string(kMinKeySecretBytes) +
                 " secret bytes, e.g. from openssl rand -hex 32)");
      }
      if (backend.key_hash != KeyHash::kHmacSha256 && secret != nullptr) {
        fail(secret->value, fields.path("key_secret_file"),
             "is only used with key_hash: hmac-sha256, and key_hash is " +
                 std::string(key_hash_name(backend.key_hash)));
      }
    });
  }
  // A pair that was refused leaves the defaults, so that later checks (validate's preflight)
  // do not report the same mistake again in other words.
  if (!ok) {
    backend.key_hash = KeyHash::kSha256;
    backend.key_secret_file.clear();
  }
}

}  // namespace

void parse_backend(const YAML::Node& node, BackendConfig& backend) {
  if (node.IsNull()) return;
  expect_map(node, "backend",
             "a mapping of url, key_prefix, key_hash, key_secret_file, timeout, on_error, "
             "breaker_failures, breaker_probe, tls, over_limit_cache, max_batch, max_in_flight, "
             "durability, require_at_start, tenants_file");
  Fields fields(node, "backend",
                {"url", "key_prefix", "key_hash", "key_secret_file", "timeout", "on_error",
                 "breaker_failures", "breaker_probe", "tls", "over_limit_cache", "max_batch",
                 "max_in_flight", "durability", "require_at_start", "tenants_file"});
  collect([&] {
    read_choice(fields, "durability", {{"async", 0}, {"replicated", 1}}, backend.replica_acks);
  });
  if (const Entry* tenants = fields.find("tenants_file"))
    collect([&] {
      backend.tenants_file =
          non_empty_scalar(tenants->value, fields.path("tenants_file"), "a file path");
    });
  if (const Entry* require = fields.find("require_at_start"))
    collect([&] {
      backend.require_at_start = boolean(require->value, fields.path("require_at_start"));
    });
  if (const Entry* cache = fields.find("over_limit_cache"))
    collect([&] {
      backend.over_limit_cache = static_cast<std::size_t>(
          whole_number(cache->value, fields.path("over_limit_cache"), 0, 100'000'000));
    });
  for (auto [name, out] : {std::pair{"max_batch", &backend.max_batch},
                           std::pair{"max_in_flight", &backend.max_in_flight}}) {
    if (const Entry* entry = fields.find(name))
      collect(
          [&] { *out = static_cast<int>(whole_number(entry->value, fields.path(name), 1, 4096)); });
  }
  bool url_read = true;  // the TLS check below needs the URL as written
  if (const Entry* url = fields.find("url"))
    url_read = collect([&] {
      const std::string path = fields.path("url");
      const std::string text = scalar(url->value, path, "a backend URL");
      // A Redis URL needs something after its scheme.
      const BackendScheme* scheme = find_backend_scheme(text);
      const bool known = scheme != nullptr && (scheme->kind == BackendKind::kMemory ||
                                               text.size() > scheme->prefix.size());
      if (!known) {
        fail(url->value, path,
             quote_for_error(printable_url(text)) + " is not a backend URL (use " +
                 backend_url_forms() + ")");
      }
      backend.url = text;
    });
  if (const Entry* prefix = fields.find("key_prefix"))
    collect([&] {
      backend.key_prefix =
          non_empty_scalar(prefix->value, fields.path("key_prefix"), "a non-empty string");
    });
  parse_key_hash_fields(fields, backend);

  if (const Entry* timeout = fields.find("timeout"))
    collect([&] { backend.timeout = millis(*timeout, fields.path("timeout")); });
  if (const Entry* failures = fields.find("breaker_failures"))
    collect([&] {
      backend.breaker_failures = static_cast<int>(
          whole_number(failures->value, fields.path("breaker_failures"), 0, 1000000));
    });
  if (const Entry* probe = fields.find("breaker_probe"))
    collect([&] { backend.breaker_probe = millis(*probe, fields.path("breaker_probe")); });
  collect([&] { read_choice(fields, "on_error", kOnErrorNames, backend.on_error); });
  if (const Entry* tls = fields.find("tls"))
    collect([&] {
      const std::string path = fields.path("tls");
      expect_map(tls->value, path,
                 "a mapping of ca_file, cert_file, key_file, server_name, insecure");
      Fields tls_fields(tls->value, path,
                        {"ca_file", "cert_file", "key_file", "server_name", "insecure"});
      TlsOptions& out = backend.tls.emplace();
      for (auto [name, field] :
           {std::pair{"ca_file", &out.ca_file}, std::pair{"cert_file", &out.cert_file},
            std::pair{"key_file", &out.key_file}, std::pair{"server_name", &out.server_name}}) {
        if (const Entry* entry = tls_fields.find(name))
          collect([&] {
            const std::string field_path = tls_fields.path(name);
            *field = scalar(entry->value, field_path, "a file path or name");
            if (field->empty()) fail(entry->value, field_path, "must not be empty");
          });
      }
      if (const Entry* insecure = tls_fields.find("insecure"))
        collect([&] { out.insecure = boolean(insecure->value, tls_fields.path("insecure")); });
      // Only one of the two written (one written but unusable was reported above).
      if ((tls_fields.find("cert_file") == nullptr) != (tls_fields.find("key_file") == nullptr)) {
        fail(tls->value, path, "cert_file and key_file go together (mutual TLS needs both)");
      }
      const BackendScheme* scheme = find_backend_scheme(backend.url);
      const bool tls_url = scheme != nullptr && scheme->tls;
      if (!tls_url && url_read) {
        fail(tls->value, path,
             "is set but backend.url is not rediss:// or rediss+cluster:// (a plain URL would send "
             "everything in clear)");
      }
    });
}

}  // namespace spillway::policy
