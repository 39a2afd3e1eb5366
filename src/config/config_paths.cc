// A config file's relative file paths, resolved against the file's own directory (docs/SPEC.md
// §7): a config works the same whatever directory serve, validate or inspect is started in.
#include <filesystem>
#include <string>

#include "src/config/config.h"

namespace spillway::policy {

namespace {

// `value` under `dir` when it is a relative path; empty and absolute values as they are.
void resolve_one(std::string& value, const std::filesystem::path& dir) {
  if (value.empty() || dir.empty()) return;
  const std::filesystem::path path(value);
  if (path.is_absolute()) return;
  value = (dir / path).lexically_normal().string();
}

}  // namespace

void resolve_config_paths(Config& config, const std::string& config_path) {
  const std::filesystem::path dir = std::filesystem::path(config_path).parent_path();
  resolve_one(config.server.admin_token_file, dir);
  if (config.server.tls) {
    resolve_one(config.server.tls->cert_file, dir);
    resolve_one(config.server.tls->key_file, dir);
    resolve_one(config.server.tls->client_ca_file, dir);
  }
  resolve_one(config.backend.key_secret_file, dir);
  resolve_one(config.backend.tenants_file, dir);
  if (config.backend.tls) {
    resolve_one(config.backend.tls->ca_file, dir);
    resolve_one(config.backend.tls->cert_file, dir);
    resolve_one(config.backend.tls->key_file, dir);
  }
  resolve_one(config.rls.config, dir);
}

}  // namespace spillway::policy
