// The Envoy examples an Envoy user pastes work as written, without an Envoy:
//   - every key of each examples/envoy/*/envoy.yaml is a field of the message it sits in. The
//     messages come from the .proto files in proto/ (RateLimitStrategy, TokenBucket, their enums)
//     and, for Envoy's config messages spillway does not vendor, from kEexEnvoyFields below: the
//     field names of Envoy's published API (api/envoy/..., api of cncf/xds) that the examples
//     use. A misspelt or misplaced field, which Envoy refuses at start, fails here;
//   - examples/envoy/ratelimit/: spillway.yaml loads and listens where envoy.yaml's cluster
//     calls, and every descriptor envoy.yaml's rate_limits build (from the request's headers, its
//     path and its address) gets a limit from rules.yaml, with the RateLimit-* headers spillway
//     adds;
//   - examples/envoy/rate-limit-quota/: the same for the rate_limit_quota filter: its domain,
//     its RLQS cluster, each bucket id's pairs a descriptor rules.yaml limits, a reporting
//     interval Envoy takes, and expired assignments that deny (docs/SPEC.md §9.7).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "spillway/clock.h"
#include "spillway/duration.h"
#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_engine.h"

namespace spillway {
namespace {

namespace fs = std::filesystem;

const fs::path kEexSource = SPILLWAY_SOURCE_DIR;
const fs::path kEexEnvoy = kEexSource / "examples/envoy";

// ---------------------------------------------------------------------------------------------
// The schema: message name -> field name -> what the field holds.
struct EexField {
  // A message's full name, "enum:<full name>", "any", "bool", "uint" (an unsigned integer), or
  // "" (another scalar, or a message not checked further).
  std::string type;
  bool map = false;  // map<string, type>
};
using EexSchema = std::map<std::string, std::map<std::string, EexField>>;

struct EexProtos {
  EexSchema messages;
  std::map<std::string, std::set<std::string>> enums;  // full name -> value names
};

// Envoy's config messages the examples use that proto/ does not hold: one message per
// unindented line, then its fields, each `name` (a scalar, an enum or a message not checked
// further), `name:bool`, `name:uint` (an unsigned integer), `name:Type` (a message checked field
// by field), `name:map:Type` or `name:any` (a TypedExtensionConfig's typed_config or an Any: its
// "@type" names the message).
constexpr std::string_view kEexEnvoyFields = R"(
envoy.config.bootstrap.v3.Bootstrap
  node admin:envoy.config.bootstrap.v3.Admin static_resources:envoy.config.bootstrap.v3.StaticResources
envoy.config.bootstrap.v3.Admin
  access_log address:envoy.config.core.v3.Address
envoy.config.bootstrap.v3.StaticResources
  listeners:envoy.config.listener.v3.Listener clusters:envoy.config.cluster.v3.Cluster secrets
envoy.config.core.v3.Address
  socket_address:envoy.config.core.v3.SocketAddress pipe
envoy.config.core.v3.SocketAddress
  protocol address port_value:uint named_port resolver_name ipv4_compat
envoy.config.listener.v3.Listener
  name address:envoy.config.core.v3.Address filter_chains:envoy.config.listener.v3.FilterChain
envoy.config.listener.v3.FilterChain
  filter_chain_match filters:envoy.config.listener.v3.Filter transport_socket name
envoy.config.listener.v3.Filter
  name typed_config:any
envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
  codec_type stat_prefix route_config:envoy.config.route.v3.RouteConfiguration rds
  http_filters:envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter
  normalize_path:bool merge_slashes:bool use_remote_address:bool xff_num_trusted_hops:uint access_log
envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter
  name typed_config:any is_optional:bool disabled:bool
envoy.config.route.v3.RouteConfiguration
  name virtual_hosts:envoy.config.route.v3.VirtualHost
envoy.config.route.v3.VirtualHost
  name domains routes:envoy.config.route.v3.Route rate_limits:envoy.config.route.v3.RateLimit
  typed_per_filter_config:map:any
envoy.config.route.v3.Route
  name match:envoy.config.route.v3.RouteMatch route:envoy.config.route.v3.RouteAction
  direct_response:envoy.config.route.v3.DirectResponseAction typed_per_filter_config:map:any
envoy.config.route.v3.RouteMatch
  prefix path safe_regex path_separated_prefix headers:envoy.config.route.v3.HeaderMatcher
envoy.config.route.v3.HeaderMatcher
  name exact_match present_match:bool string_match invert_match:bool treat_missing_header_as_empty:bool
envoy.config.route.v3.RouteAction
  cluster timeout rate_limits:envoy.config.route.v3.RateLimit include_vh_rate_limits:bool
envoy.config.route.v3.DirectResponseAction
  status:uint body:envoy.config.core.v3.DataSource
envoy.config.core.v3.DataSource
  filename inline_bytes inline_string environment_variable
envoy.config.route.v3.RateLimit
  stage:uint disable_key actions:envoy.config.route.v3.RateLimit.Action limit hits_addend:envoy.config.route.v3.RateLimit.HitsAddend
  apply_on_stream_done:bool
envoy.config.route.v3.RateLimit.HitsAddend
  number format
envoy.config.route.v3.RateLimit.Action
  source_cluster destination_cluster request_headers:envoy.config.route.v3.RateLimit.Action.RequestHeaders
  remote_address:envoy.config.route.v3.RateLimit.Action.RemoteAddress
  generic_key:envoy.config.route.v3.RateLimit.Action.GenericKey header_value_match metadata
  extension masked_remote_address query_parameter_value_match
envoy.config.route.v3.RateLimit.Action.RequestHeaders
  header_name descriptor_key skip_if_absent:bool
envoy.config.route.v3.RateLimit.Action.RemoteAddress
envoy.config.route.v3.RateLimit.Action.GenericKey
  descriptor_value descriptor_key
envoy.extensions.filters.http.ratelimit.v3.RateLimit
  domain stage:uint request_type timeout failure_mode_deny:bool rate_limited_as_resource_exhausted:bool
  rate_limit_service:envoy.config.ratelimit.v3.RateLimitServiceConfig enable_x_ratelimit_headers
  disable_x_envoy_ratelimited_header:bool rate_limited_status response_headers_to_add status_on_error
  stat_prefix
envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute
  vh_rate_limits override_option rate_limits:envoy.config.route.v3.RateLimit domain
envoy.config.ratelimit.v3.RateLimitServiceConfig
  grpc_service:envoy.config.core.v3.GrpcService transport_api_version
envoy.config.core.v3.GrpcService
  envoy_grpc:envoy.config.core.v3.GrpcService.EnvoyGrpc google_grpc timeout initial_metadata
envoy.config.core.v3.GrpcService.EnvoyGrpc
  cluster_name authority retry_policy
envoy.extensions.filters.http.header_to_metadata.v3.Config
  request_rules response_rules:envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule
envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule
  header cookie on_header_present:envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair
  on_header_missing remove
envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair
  metadata_namespace key value regex_value_rewrite type encode
envoy.extensions.filters.http.router.v3.Router
  dynamic_stats start_child_span upstream_log suppress_envoy_headers
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig
  rlqs_server:envoy.config.core.v3.GrpcService domain bucket_matchers:xds.type.matcher.v3.Matcher
  filter_enabled filter_enforced request_headers_to_add_when_not_enforced
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings
  bucket_id_builder:envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.BucketIdBuilder
  reporting_interval deny_response_settings
  no_assignment_behavior:envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.NoAssignmentBehavior
  expired_assignment_behavior:envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.ExpiredAssignmentBehavior
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.BucketIdBuilder
  bucket_id_builder:map:envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.BucketIdBuilder.ValueBuilder
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.BucketIdBuilder.ValueBuilder
  string_value custom_value:xds.core.v3.TypedExtensionConfig
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.NoAssignmentBehavior
  fallback_rate_limit:envoy.type.v3.RateLimitStrategy block_requests
envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.ExpiredAssignmentBehavior
  expired_assignment_behavior_timeout fallback_rate_limit:envoy.type.v3.RateLimitStrategy
  reuse_last_assignment
xds.type.matcher.v3.Matcher
  matcher_list:xds.type.matcher.v3.Matcher.MatcherList matcher_tree
  on_no_match:xds.type.matcher.v3.Matcher.OnMatch
xds.type.matcher.v3.Matcher.OnMatch
  matcher:xds.type.matcher.v3.Matcher action:xds.core.v3.TypedExtensionConfig keep_matching:bool
xds.type.matcher.v3.Matcher.MatcherList
  matchers:xds.type.matcher.v3.Matcher.MatcherList.FieldMatcher
xds.type.matcher.v3.Matcher.MatcherList.FieldMatcher
  predicate:xds.type.matcher.v3.Matcher.MatcherList.Predicate on_match:xds.type.matcher.v3.Matcher.OnMatch
xds.type.matcher.v3.Matcher.MatcherList.Predicate
  single_predicate:xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate
  or_matcher and_matcher not_matcher
xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate
  input:xds.core.v3.TypedExtensionConfig value_match:xds.type.matcher.v3.StringMatcher custom_match
xds.type.matcher.v3.StringMatcher
  exact prefix suffix safe_regex:xds.type.matcher.v3.RegexMatcher contains custom ignore_case:bool
xds.type.matcher.v3.RegexMatcher
  google_re2 regex
xds.core.v3.TypedExtensionConfig
  name typed_config:any
envoy.type.matcher.v3.HttpRequestHeaderMatchInput
  header_name
envoy.extensions.upstreams.http.v3.HttpProtocolOptions
  common_http_protocol_options upstream_http_protocol_options
  explicit_http_config:envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig
  use_downstream_protocol_config auto_config
envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig
  http_protocol_options http2_protocol_options http3_protocol_options
envoy.config.cluster.v3.Cluster
  name type connect_timeout lb_policy load_assignment:envoy.config.endpoint.v3.ClusterLoadAssignment
  typed_extension_protocol_options:map:any dns_lookup_family
envoy.config.endpoint.v3.ClusterLoadAssignment
  cluster_name endpoints:envoy.config.endpoint.v3.LocalityLbEndpoints
envoy.config.endpoint.v3.LocalityLbEndpoints
  locality lb_endpoints:envoy.config.endpoint.v3.LbEndpoint priority load_balancing_weight
envoy.config.endpoint.v3.LbEndpoint
  endpoint:envoy.config.endpoint.v3.Endpoint health_status load_balancing_weight
envoy.config.endpoint.v3.Endpoint
  address:envoy.config.core.v3.Address hostname
)";

void eex_add_envoy_fields(EexSchema& schema) {
  std::istringstream lines{std::string(kEexEnvoyFields)};
  std::string line, message;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string word;
    if (line.front() != ' ') {
      words >> message;
      schema[message];
      continue;
    }
    while (words >> word) {
      EexField field;
      std::string name = word;
      if (const std::size_t colon = word.find(':'); colon != std::string::npos) {
        name = word.substr(0, colon);
        field.type = word.substr(colon + 1);
        if (field.type.starts_with("map:")) {
          field.map = true;
          field.type = field.type.substr(4);
        }
      }
      schema[message][name] = field;
    }
  }
}

// A .proto file's tokens: identifiers (with dots), numbers and single punctuation characters,
// without comments or strings.
std::vector<std::string> eex_proto_tokens(const std::string& text) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '"') {
      const std::size_t end = text.find('"', i + 1);
      tokens.push_back("\"\"");
      i = end == std::string::npos ? text.size() : end + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.')) {
        ++j;
      }
      tokens.push_back(text.substr(i, j - i));
      i = j;
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) tokens.emplace_back(1, c);
      ++i;
    }
  }
  return tokens;
}

bool eex_scalar_type(const std::string& type) {
  static const std::set<std::string> scalars = {
      "double",  "float",   "int32",    "int64",    "uint32", "uint64", "sint32", "sint64",
      "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",   "string", "bytes"};
  return scalars.contains(type) || type.starts_with("google.protobuf.");
}

// Reads one .proto file's messages, their fields (oneof members included) and enums. Field
// types are kept as written, with the scope they were written in, for eex_resolve.
struct EexRawField {
  std::string scope, name, type;
  bool map = false;
};

void eex_read_proto(const std::string& text, EexProtos& out, std::vector<EexRawField>& raw) {
  const std::vector<std::string> t = eex_proto_tokens(text);
  std::string package;
  std::vector<std::pair<std::string, std::string>> scopes;  // (kind, full name)
  std::size_t i = 0;
  const auto skip_to = [&](const std::string& token) {
    while (i < t.size() && t[i] != token) ++i;
    ++i;
  };
  const auto scope_name = [&]() { return scopes.empty() ? package : scopes.back().second; };
  while (i < t.size()) {
    const std::string& w = t[i];
    if (w == "syntax" || w == "import" || w == "option") {
      skip_to(";");
    } else if (w == "package") {
      package = t.at(i + 1);
      skip_to(";");
    } else if (w == "message" || w == "enum" || w == "oneof" || w == "service") {
      const std::string name = t.at(i + 1);
      std::string full = w == "oneof" ? scope_name() : scope_name() + "." + name;
      if (w == "message") out.messages[full];
      if (w == "enum") out.enums[full];
      scopes.emplace_back(w, full);
      i += 3;  // kind, name, "{"
    } else if (w == "}") {
      if (!scopes.empty()) scopes.pop_back();
      ++i;
    } else if (w == ";") {
      ++i;
    } else if (!scopes.empty() && scopes.back().first == "enum") {
      out.enums[scopes.back().second].insert(w);
      skip_to(";");
    } else if (!scopes.empty() && scopes.back().first == "service") {
      if (w == "rpc") {  // rpc Name(...) returns (...) {} or ;
        while (i < t.size() && t[i] != "{" && t[i] != ";") ++i;
        if (i < t.size() && t[i] == "{")
          skip_to("}");
        else
          ++i;
      } else {
        ++i;
      }
    } else if (!scopes.empty()) {  // a field of a message (or of a oneof in it)
      std::size_t j = i;
      if (t[j] == "repeated" || t[j] == "optional") ++j;
      EexRawField field{.scope = scope_name()};
      if (t[j] == "map") {  // map < K , V > name
        field.map = true;
        field.type = t.at(j + 4);
        field.name = t.at(j + 6);
      } else {
        field.type = t.at(j);
        field.name = t.at(j + 1);
      }
      raw.push_back(field);
      skip_to(";");
    } else {
      ++i;
    }
  }
}

// A type name as written in `scope`, resolved the way protoc does: innermost scope first.
std::string eex_resolve(const EexProtos& protos, const std::string& scope, const std::string& type,
                        bool& is_enum) {
  is_enum = false;
  if (type == "bool") return "bool";
  if (type == "uint32" || type == "uint64") return "uint";
  if (eex_scalar_type(type)) return "";
  std::string at = scope;
  while (true) {
    const std::string candidate = at.empty() ? type : at + "." + type;
    if (protos.messages.contains(candidate)) return candidate;
    if (protos.enums.contains(candidate)) {
      is_enum = true;
      return candidate;
    }
    if (at.empty()) return "?" + type;
    const std::size_t dot = at.rfind('.');
    at = dot == std::string::npos ? "" : at.substr(0, dot);
  }
}

EexProtos eex_load_schema() {
  EexProtos protos;
  std::vector<EexRawField> raw;
  for (const auto& entry : fs::recursive_directory_iterator(kEexSource / "proto")) {
    if (entry.path().extension() != ".proto") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    eex_read_proto(text.str(), protos, raw);
  }
  for (const EexRawField& f : raw) {
    bool is_enum = false;
    const std::string type = eex_resolve(protos, f.scope, f.type, is_enum);
    protos.messages[f.scope][f.name] = {.type = is_enum ? "enum:" + type : type, .map = f.map};
  }
  EexSchema envoy;
  eex_add_envoy_fields(envoy);
  for (auto& [name, fields] : envoy) {
    // proto/ wins: a message it holds is read from there, never from the list above.
    if (!protos.messages.contains(name)) protos.messages[name] = std::move(fields);
  }
  return protos;
}

// Every key of `node`, read as `type`, is one of its fields; recurses into the fields that are
// messages. Each problem is one line of `errors`: "<path>: <what>".
void eex_check(const EexProtos& protos, const YAML::Node& node, std::string type,
               const std::string& path, std::vector<std::string>& errors) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      eex_check(protos, node[i], type, path + "[" + std::to_string(i) + "]", errors);
    }
    return;
  }
  if (type.empty()) return;  // a scalar, or a message this schema does not open
  if (type == "bool" || type == "uint") {
    const std::string value = node.IsScalar() ? node.as<std::string>() : "";
    const bool fits =
        type == "bool"
            ? value == "true" || value == "false"
            : !value.empty() && std::all_of(value.begin(), value.end(),
                                            [](unsigned char c) { return std::isdigit(c); });
    if (!fits) errors.push_back(path + ": not a " + (type == "bool" ? "boolean" : "whole number"));
    return;
  }
  if (type.starts_with("?")) {
    errors.push_back(path + ": type " + type.substr(1) + " is in no .proto of proto/");
    return;
  }
  if (type.starts_with("enum:")) {
    const std::set<std::string>& values = protos.enums.at(type.substr(5));
    if (!node.IsScalar() || !values.contains(node.as<std::string>())) {
      errors.push_back(path + ": not a value of " + type.substr(5));
    }
    return;
  }
  if (!node.IsMap()) {
    errors.push_back(path + ": a mapping expected (" + type + ")");
    return;
  }
  if (type == "any") {
    const YAML::Node at_type = node["@type"];
    const std::string prefix = "type.googleapis.com/";
    if (!at_type.IsDefined() || !at_type.IsScalar() ||
        !at_type.as<std::string>().starts_with(prefix)) {
      errors.push_back(path + ": an \"@type\": type.googleapis.com/<message> expected");
      return;
    }
    type = at_type.as<std::string>().substr(prefix.size());
  }
  const auto message = protos.messages.find(type);
  if (message == protos.messages.end()) {
    errors.push_back(path + ": no fields known for " + type);
    return;
  }
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    if (key == "@type") continue;
    const auto field = message->second.find(key);
    if (field == message->second.end()) {
      errors.push_back(path + "." + key + ": no field " + key + " in " + type);
      continue;
    }
    if (field->second.map) {
      if (!item.second.IsMap()) {
        errors.push_back(path + "." + key + ": a map expected");
        continue;
      }
      for (const auto& entry : item.second) {
        eex_check(protos, entry.second, field->second.type,
                  path + "." + key + "." + entry.first.as<std::string>(), errors);
      }
    } else {
      eex_check(protos, item.second, field->second.type, path + "." + key, errors);
    }
  }
}

std::string eex_joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// YAML navigation (an undefined node where a step is missing).
YAML::Node eex_at(const YAML::Node& node, const std::vector<std::string>& keys, std::size_t i = 0) {
  if (i == keys.size()) return node;
  if (!node.IsDefined() || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return eex_at(node[keys[i]], keys, i + 1);
}

std::string eex_text(const YAML::Node& node) {
  return node.IsDefined() && node.IsScalar() ? node.as<std::string>() : std::string();
}

YAML::Node eex_named(const YAML::Node& list, const std::string& name) {
  if (list.IsDefined() && list.IsSequence()) {
    for (const YAML::Node& item : list) {
      if (eex_text(eex_at(item, {"name"})) == name) return item;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The example's HTTP connection manager and the port the cluster `name` calls, HTTP/2.
YAML::Node eex_hcm(const YAML::Node& envoy) {
  const YAML::Node listeners = eex_at(envoy, {"static_resources", "listeners"});
  if (!listeners.IsSequence() || listeners.size() != 1)
    return YAML::Node(YAML::NodeType::Undefined);
  return eex_at(eex_named(eex_at(listeners[0]["filter_chains"][0], {"filters"}),
                          "envoy.filters.network.http_connection_manager"),
                {"typed_config"});
}

std::string eex_http2_cluster_port(const YAML::Node& envoy, const std::string& name) {
  const YAML::Node cluster = eex_named(eex_at(envoy, {"static_resources", "clusters"}), name);
  if (!eex_at(cluster, {"typed_extension_protocol_options",
                        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                        "explicit_http_config", "http2_protocol_options"})
           .IsDefined()) {
    return "";  // gRPC needs HTTP/2
  }
  return eex_text(eex_at(cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0],
                         {"endpoint", "address", "socket_address", "port_value"}));
}

policy::Config eex_load_config(const fs::path& file) {
  Result<policy::Config> config = policy::load_config_file(file.string());
  EXPECT_TRUE(config.has_value()) << file << ": " << config.error().message;
  return config ? *config : policy::Config{};
}

// The rules the spillway config names (relative to its own directory, resolved when it loads),
// in an engine on a clock that moves only when told.
struct EexRules {
  explicit EexRules(const policy::Config& config)
      : clock(std::make_shared<ManualClock>(19'676 * kMicrosPerDay)),
        store(MemoryStoreOptions{.clock = clock}) {
    Result<rls::RlsRules> loaded = rls::load_rls_rules((kEexSource / config.rls.config).string());
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().message);
    if (loaded) rules = std::make_shared<const rls::RlsRules>(std::move(*loaded));
    engine = std::make_unique<rls::RlsEngine>(
        store, rules,
        rls::RlsOptions{.response_headers = config.rls.response_headers, .clock = clock});
  }
  rls::RlsResponse ask(const std::string& domain, std::vector<rls::RlsEntry> entries) {
    rls::RlsRequest request{.domain = domain};
    request.descriptors.push_back({.entries = std::move(entries)});
    std::optional<Result<rls::RlsResponse>> out;
    engine->should_rate_limit(request, [&](Result<rls::RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    return out && *out ? **out : rls::RlsResponse{};
  }
  std::shared_ptr<ManualClock> clock;
  MemoryStore store;
  std::shared_ptr<const rls::RlsRules> rules;
  std::unique_ptr<rls::RlsEngine> engine;
};

std::string eex_header(const rls::RlsResponse& r, const std::string& name) {
  for (const auto& [key, value] : r.response_headers) {
    if (key == name) return value;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
TEST(EnvoyExamples, EveryFieldOfEveryEnvoyYamlIsAFieldOfItsMessage) {
  const EexProtos protos = eex_load_schema();
  // proto/'s own messages are read from there (the strategy an RLQS filter falls back to).
  ASSERT_TRUE(protos.messages.contains("envoy.type.v3.RateLimitStrategy"));
  EXPECT_EQ(protos.messages.at("envoy.type.v3.TokenBucket").at("fill_interval").type, "");
  EXPECT_EQ(protos.messages.at("envoy.type.v3.RateLimitStrategy").at("blanket_rule").type,
            "enum:envoy.type.v3.RateLimitStrategy.BlanketRule");
  EXPECT_TRUE(protos.enums.at("envoy.type.v3.RateLimitStrategy.BlanketRule").contains("DENY_ALL"));

  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kEexEnvoy)) {
    if (fs::exists(entry.path() / "envoy.yaml")) files.push_back(entry.path() / "envoy.yaml");
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u) << "llm-tokens, ratelimit, rate-limit-quota";
  for (const fs::path& file : files) {
    std::vector<std::string> errors;
    eex_check(protos, YAML::LoadFile(file.string()), "envoy.config.bootstrap.v3.Bootstrap", "",
              errors);
    EXPECT_TRUE(errors.empty()) << file << ":\n" << eex_joined(errors);
  }

  // The check finds what Envoy would refuse: a misspelt field, a misspelt boolean, a field in the
  // wrong message, a strategy field that is not in proto/, a blanket rule that does not exist.
  const YAML::Node bad = YAML::Load(R"(
static_resources:
  clusters:
  - name: x
    conect_timeout: 1s
  listeners:
  - name: l
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          http_filters:
          - name: envoy.filters.http.ratelimit
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit
              failure_mode_deny: flase
              rate_limit_service: {cluster_name: spillway}
          - name: envoy.filters.http.rate_limit_quota
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig
              bucket_matchers:
                on_no_match:
                  action:
                    name: a
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings
                      no_assignment_behavior:
                        fallback_rate_limit: {token_bucket: {max_token: 5}}
                      expired_assignment_behavior:
                        fallback_rate_limit: {blanket_rule: DENY_SOME}
)");
  std::vector<std::string> errors;
  eex_check(protos, bad, "envoy.config.bootstrap.v3.Bootstrap", "", errors);
  const std::string all = eex_joined(errors);
  EXPECT_EQ(errors.size(), 5u) << all;
  EXPECT_NE(all.find("typed_config.failure_mode_deny: not a boolean"), std::string::npos) << all;
  EXPECT_NE(all.find("clusters[0].conect_timeout: no field"), std::string::npos) << all;
  EXPECT_NE(all.find("rate_limit_service.cluster_name: no field cluster_name in "
                     "envoy.config.ratelimit.v3.RateLimitServiceConfig"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("token_bucket.max_token: no field max_token in envoy.type.v3.TokenBucket"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("blanket_rule: not a value of envoy.type.v3.RateLimitStrategy.BlanketRule"),
            std::string::npos)
      << all;
}

// examples/envoy/ratelimit/: Envoy's ratelimit filter, descriptors from headers, path and address.
TEST(EnvoyExamples, RateLimitFilterSendsDescriptorsTheRulesLimit) {
  const fs::path dir = kEexEnvoy / "ratelimit";
  const policy::Config config = eex_load_config(dir / "spillway.yaml");
  // Relative to the config's directory (docs/SPEC.md §7), whatever the working directory.
  ASSERT_EQ(config.rls.config, (dir / "rules.yaml").lexically_normal().string());
  EXPECT_EQ(config.rls.response_headers, policy::RlsHeaders::kDraft);
  EexRules rules(config);
  ASSERT_TRUE(rules.rules != nullptr);
  ASSERT_EQ(rules.rules->domains.size(), 1u);
  const std::string domain = rules.rules->domains.begin()->first;

  const YAML::Node envoy = YAML::LoadFile((dir / "envoy.yaml").string());
  const YAML::Node hcm = eex_hcm(envoy);
  ASSERT_TRUE(hcm.IsDefined());
  const YAML::Node filters = eex_at(hcm, {"http_filters"});
  ASSERT_TRUE(filters.IsSequence() && filters.size() == 2);
  EXPECT_EQ(eex_text(eex_at(filters[1], {"name"})), "envoy.filters.http.router");
  const YAML::Node filter =
      eex_at(eex_named(filters, "envoy.filters.http.ratelimit"), {"typed_config"});
  EXPECT_EQ(eex_text(eex_at(filter, {"domain"})), domain);
  EXPECT_EQ(eex_text(eex_at(filter, {"rate_limit_service", "transport_api_version"})), "V3");
  EXPECT_FALSE(eex_at(filter, {"enable_x_ratelimit_headers"}).IsDefined())
      << "spillway adds the RateLimit-* headers (Envoy's own would report the rule's rate)";
  const std::string cluster = eex_text(
      eex_at(filter, {"rate_limit_service", "grpc_service", "envoy_grpc", "cluster_name"}));
  const std::string port = eex_http2_cluster_port(envoy, cluster);
  ASSERT_FALSE(port.empty()) << "an HTTP/2 cluster " << cluster;
  EXPECT_TRUE(config.server.grpc_listen.ends_with(":" + port))
      << "spillway listens where Envoy calls: " << config.server.grpc_listen << " vs " << port;

  // Every rate_limits entry of every route: the descriptor its actions build for a sample
  // request, which rules.yaml must limit.
  const std::map<std::string, std::string> sample_headers = {{"x-api-key", "k1"},
                                                             {":path", "/v1/search?q=envoy"}};
  std::size_t entries = 0;
  std::set<std::string> descriptor_keys;
  for (const YAML::Node& route : eex_at(hcm, {"route_config", "virtual_hosts"})[0]["routes"]) {
    for (const YAML::Node& entry : eex_at(route, {"route", "rate_limits"})) {
      std::vector<rls::RlsEntry> descriptor;
      for (const YAML::Node& action : eex_at(entry, {"actions"})) {
        if (const YAML::Node h = eex_at(action, {"request_headers"}); h.IsDefined()) {
          const std::string header = eex_text(eex_at(h, {"header_name"}));
          ASSERT_TRUE(sample_headers.contains(header)) << header;
          // Envoy sends no descriptor without the header: the route must require it.
          if (header != ":path") {
            const YAML::Node required = eex_at(route, {"match", "headers"});
            bool present = false;
            for (const YAML::Node& m : required) {
              present = present || (eex_text(eex_at(m, {"name"})) == header &&
                                    eex_text(eex_at(m, {"present_match"})) == "true");
            }
            EXPECT_TRUE(present) << "the route requires " << header;
          }
          descriptor.push_back(
              {eex_text(eex_at(h, {"descriptor_key"})), sample_headers.at(header)});
        } else if (eex_at(action, {"remote_address"}).IsDefined()) {
          descriptor.push_back({"remote_address", "203.0.113.7"});
        } else {
          ADD_FAILURE() << "an action this test does not play: " << YAML::Dump(action);
        }
      }
      ASSERT_FALSE(descriptor.empty());
      std::string keys;
      for (const rls::RlsEntry& e : descriptor) keys += e.key + ",";
      descriptor_keys.insert(keys);
      const rls::RlsResponse r = rules.ask(domain, descriptor);
      ASSERT_EQ(r.statuses.size(), 1u);
      EXPECT_EQ(r.overall_code, rls::Code::kOk) << keys;
      EXPECT_TRUE(r.statuses[0].current_limit.has_value()) << "rules.yaml limits [" << keys << "]";
      ++entries;
    }
  }
  EXPECT_EQ(entries, 4u) << "three entries on the keyed route, one on the other";
  EXPECT_EQ(descriptor_keys,
            (std::set<std::string>{"api_key,", "api_key,path,", "remote_address,"}));

  // The search limit (gcra 10/min, burst 5) as a client sees it through Envoy: RateLimit-Limit
  // is the burst its RateLimit-Remaining counts down from.
  const rls::RlsResponse search =
      rules.ask(domain, {{"api_key", "k2"}, {"path", "/v1/search?q=more"}});
  EXPECT_EQ(search.statuses.at(0).current_limit,
            (rls::CurrentLimit{"search", 10, rls::Unit::kMinute}));
  EXPECT_EQ(eex_header(search, "RateLimit-Limit"), "5");
  EXPECT_EQ(eex_header(search, "RateLimit-Remaining"), "4");
  // Another path under the key: no path limit.
  const rls::RlsResponse other = rules.ask(domain, {{"api_key", "k2"}, {"path", "/v1/items"}});
  EXPECT_FALSE(other.statuses.at(0).current_limit.has_value());
}

// examples/envoy/rate-limit-quota/: Envoy's rate_limit_quota filter and its buckets.
TEST(EnvoyExamples, RateLimitQuotaFilterBucketsAreDescriptorsTheRulesLimit) {
  const fs::path dir = kEexEnvoy / "rate-limit-quota";
  const policy::Config config = eex_load_config(dir / "spillway.yaml");
  ASSERT_EQ(config.rls.config, (dir / "rules.yaml").lexically_normal().string());
  EexRules rules(config);
  ASSERT_TRUE(rules.rules != nullptr);
  ASSERT_EQ(rules.rules->domains.size(), 1u);
  const std::string domain = rules.rules->domains.begin()->first;

  const YAML::Node envoy = YAML::LoadFile((dir / "envoy.yaml").string());
  const YAML::Node hcm = eex_hcm(envoy);
  ASSERT_TRUE(hcm.IsDefined());
  const YAML::Node filters = eex_at(hcm, {"http_filters"});
  ASSERT_TRUE(filters.IsSequence() && filters.size() == 2);
  EXPECT_EQ(eex_text(eex_at(filters[1], {"name"})), "envoy.filters.http.router");
  const YAML::Node filter =
      eex_at(eex_named(filters, "envoy.filters.http.rate_limit_quota"), {"typed_config"});
  EXPECT_EQ(eex_text(eex_at(filter, {"@type"})),
            "type.googleapis.com/"
            "envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig");
  EXPECT_EQ(eex_text(eex_at(filter, {"domain"})), domain);
  const std::string cluster =
      eex_text(eex_at(filter, {"rlqs_server", "envoy_grpc", "cluster_name"}));
  const std::string port = eex_http2_cluster_port(envoy, cluster);
  ASSERT_FALSE(port.empty()) << "an HTTP/2 cluster " << cluster;
  EXPECT_TRUE(config.server.grpc_listen.ends_with(":" + port))
      << "spillway listens where Envoy calls: " << config.server.grpc_listen << " vs " << port;

  // Every bucket the matchers can pick: its settings, and its id's pairs (sorted by key, a
  // header's value sampled) as the descriptor spillway matches against rules.yaml.
  std::vector<YAML::Node> actions;
  for (const YAML::Node& m : eex_at(filter, {"bucket_matchers", "matcher_list", "matchers"})) {
    actions.push_back(eex_at(m, {"on_match", "action"}));
  }
  actions.push_back(eex_at(filter, {"bucket_matchers", "on_no_match", "action"}));
  std::set<std::string> bucket_keys;
  for (const YAML::Node& action : actions) {
    const YAML::Node settings = eex_at(action, {"typed_config"});
    ASSERT_TRUE(settings.IsDefined()) << YAML::Dump(action);
    EXPECT_EQ(eex_text(eex_at(settings, {"@type"})),
              "type.googleapis.com/"
              "envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings");
    // Envoy takes a reporting interval above 1 ms; whole seconds are what it reads best.
    const std::string interval = eex_text(eex_at(settings, {"reporting_interval"}));
    Result<Micros> every = parse_duration(interval);
    ASSERT_TRUE(every.has_value()) << interval;
    EXPECT_GE(*every, kMicrosPerSecond) << interval;
    EXPECT_EQ(*every % kMicrosPerSecond, 0) << interval;
    // Past an assignment's time spillway charged nothing: the bound holds only if Envoy denies.
    EXPECT_EQ(eex_text(eex_at(settings, {"expired_assignment_behavior", "fallback_rate_limit",
                                         "blanket_rule"})),
              "DENY_ALL");
    std::map<std::string, std::string> pairs;  // sorted by key, as spillway reads a BucketId
    for (const auto& item : eex_at(settings, {"bucket_id_builder", "bucket_id_builder"})) {
      const std::string key = item.first.as<std::string>();
      if (const std::string fixed = eex_text(eex_at(item.second, {"string_value"}));
          !fixed.empty()) {
        pairs[key] = fixed;
      } else {
        EXPECT_EQ(eex_text(eex_at(item.second, {"custom_value", "typed_config", "@type"})),
                  "type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput");
        pairs[key] = "sample-" +
                     eex_text(eex_at(item.second, {"custom_value", "typed_config", "header_name"}));
      }
    }
    ASSERT_FALSE(pairs.empty());
    std::vector<rls::RlsEntry> descriptor;
    std::string keys;
    for (const auto& [key, value] : pairs) {
      descriptor.push_back({key, value});
      keys += key + ",";
    }
    bucket_keys.insert(keys);
    const rls::RlsResponse r = rules.ask(domain, descriptor);
    ASSERT_EQ(r.statuses.size(), 1u);
    EXPECT_TRUE(r.statuses[0].current_limit.has_value()) << "rules.yaml limits {" << keys << "}";
  }
  EXPECT_EQ(bucket_keys, (std::set<std::string>{"api_key,", "anonymous,"}));
}

}  // namespace
}  // namespace spillway
