// What `spillway serve` checks before it binds a socket or connects to a backend, in one function
// that `spillway validate` calls too, so that validate refuses exactly what serve would stop on:
// the listen addresses, the backend URL parsed fully with its TLS files loaded (check_store),
// Envoy's rules loaded when rls.config is set, and a gRPC listener that has rules.
//
// Every problem is reported, one line each, located where the user wrote it: "FILE: line N:
// backend.url: …" for a field of the config file, "--backend: …" for a flag that replaced it,
// "backend.url: …" for a default. Nothing is bound, connected or started; files are read.
// Thread safety: a plain function of its arguments and the files it reads.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/open_store.h"
#include "src/config/config.h"
#include "src/config/listen_address.h"
#include "src/rls/rls_config.h"
#include "src/server/admin_service.h"
#include "src/server/server_tls.h"

namespace spillway::cli {

struct Preflight {
  std::vector<std::string> errors;  // one line each, in the order above; empty: all is well
  // Not errors (serve starts, validate says ok), located as errors are: an admin listener off
  // loopback without TLS, a secret file that group or others can read (src/cli/exposure.h).
  std::vector<std::string> warnings;
  bool usage_error = false;      // one is about a flag's address or a missing rules flag (exit 2)
  policy::ListenAddress listen;  // server.listen
  std::optional<policy::ListenAddress> grpc_listen;  // set when the gRPC listener is on
  // Loaded when rls.config is set; the fingerprint is of the files as they were before loading.
  std::shared_ptr<const rls::RlsRules> rules;
  std::string rules_fingerprint;
  BackendOptions backend;  // what open_store gets for backend.url
  // The admin listener (server.admin_listen) and its tokens, read from admin_token_file.
  std::optional<policy::ListenAddress> admin_listen;
  std::vector<server::AdminToken> admin_tokens;
  // server.tls loaded (its files checked): for the decision and admin listeners; null: plain.
  std::shared_ptr<server::ServerTls> tls;
  // Tenant records are needed: a by_plan layer has source: store, or the admin API is on, or a
  // Redis backend remembers denials in this process (over_limit_cache, a `sync: lease` layer):
  // counter resets reach it on the records' change log; or rls.tenant_key is set.
  bool tenants = false;
};

// `file`: the config file's name ("" for the built-in config). `flags`: the config paths a flag
// replaced, e.g. {"backend.url", "--backend"}, so that an error names the flag.
Preflight preflight(const policy::Config& config, const std::string& file,
                    const std::map<std::string, std::string>& flags = {});

// Writes each line of `lines` (an error of several lines, as parse_config's) after `prefix`.
void print_lines(std::ostream& out, const std::string& prefix, std::string_view lines);

// The config a command runs with: the file `path` names, or the built-in one without it. On an
// error, prints it to `err` ("spillway COMMAND: FILE: line N: …", each line) and returns nullopt.
std::optional<policy::Config> load_command_config(std::string_view command,
                                                  const std::optional<std::string>& path,
                                                  std::ostream& err);

// The backend options that the config describes (what serve opens, what validate checks).
BackendOptions backend_options(const policy::Config& config);

// When tenant records are in use (a by_plan layer with source: store, or the admin API) and
// Envoy's services are on (server.grpc_listen) without rls.tenant_key: the line that says blocks
// do not apply there ("server.grpc_listen: …"); nullopt otherwise. validate prints it as a
// warning, serve at start.
std::optional<std::string> rls_tenants_warning(const policy::Config& config);

}  // namespace spillway::cli
