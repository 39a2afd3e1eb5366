// The YAML config file: the documented example, defaults, and errors naming line and field.
#include "src/config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace spillway::policy {
namespace {

constexpr std::string_view kExample = R"(server:
  listen: 127.0.0.1:8080
  threads: 2
  trusted_proxies: [127.0.0.1/32, 10.0.0.0/8]
  ipv6_prefix: 64
backend:
  url: memory                 # or redis://host:port/db
  key_prefix: spillway
  timeout: 50ms
  on_error: deny              # or allow
layers:
  - name: edge
    key: [ip]
    algorithm: gcra
    limit: 1000/min
    burst: 1000               # optional
  - name: gateway
    key: [api_key]
    by_plan:
      attribute: api_key      # optional, default api_key
      default: free
      plans: {free: 60/min, pro: 600/min}
      keys: {k1: pro, k2: free}
  - name: endpoint
    key: [api_key, endpoint]
    by_endpoint:
      attribute: endpoint     # optional, default endpoint
      limits: {/search: 10/min, /export: 5/min}
)";

RateSpec per_minute(std::int64_t n, std::optional<std::int64_t> burst = std::nullopt) {
  return RateSpec{.limit = n, .period = kMicrosPerMinute, .burst = burst};
}

Cidr cidr(std::string_view text) { return parse_cidr(text).value(); }

TEST(ConfigParse, DocumentedExample) {
  Config expected;
  expected.server = ServerConfig{.listen = "127.0.0.1:8080",
                                 .threads = 2,
                                 .trusted_proxies = {cidr("127.0.0.1/32"), cidr("10.0.0.0/8")},
                                 .ipv6_prefix = 64};
  expected.backend = BackendConfig{.url = "memory",
                                   .key_prefix = "spillway",
                                   .timeout = std::chrono::milliseconds(50),
                                   .on_error = OnError::kDeny};
  expected.policy.layers.push_back({.name = "edge",
                                    .key = {"ip"},
                                    .algorithm = Algorithm::kGcra,
                                    .limit = per_minute(1000, 1000)});
  expected.policy.layers.push_back(
      {.name = "gateway",
       .key = {"api_key"},
       .by_plan = PlanSelector{.attribute = "api_key",
                               .plans = {{"free", per_minute(60)}, {"pro", per_minute(600)}},
                               .default_plan = "free",
                               .assignments = {{"k1", "pro"}, {"k2", "free"}}}});
  expected.policy.layers.push_back(
      {.name = "endpoint",
       .key = {"api_key", "endpoint"},
       .by_endpoint =
           EndpointSelector{.attribute = "endpoint",
                            .limits = {{"/search", per_minute(10)}, {"/export", per_minute(5)}}}});

  Result<Config> config = parse_config(kExample);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server, expected.server);
  EXPECT_EQ(config->backend, expected.backend);
  EXPECT_EQ(config->policy, expected.policy);
  EXPECT_EQ(*config, expected);
}

TEST(ConfigParse, EmptyFileIsTheDefaultConfig) {
  const Config defaults = default_config();
  EXPECT_EQ(defaults.policy, seed_policy_spec());
  EXPECT_EQ(defaults.server.listen, "127.0.0.1:8080");
  EXPECT_EQ(defaults.backend.url, "memory");
  for (std::string_view text : {"", "\n", "# only a comment\n", "---\n", "server:\nbackend:\n"}) {
    Result<Config> config = parse_config(text);
    ASSERT_TRUE(config.has_value()) << text << ": " << config.error().message;
    EXPECT_EQ(*config, defaults) << text;
  }
}

TEST(ConfigParse, AbsentSectionsKeepDefaults) {
  Result<Config> config = parse_config("backend:\n  url: redis://127.0.0.1:6379/2\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  Config expected = default_config();
  expected.backend.url = "redis://127.0.0.1:6379/2";
  EXPECT_EQ(*config, expected);
}

// The configuration shown in README.md is a valid one.
TEST(ConfigParse, ReadmeExampleLoads) {
  std::ifstream file(std::string(SPILLWAY_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
  const std::size_t begin = readme.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = readme.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  Result<Config> config = parse_config(readme.substr(begin + 8, end - begin - 8));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->policy.layers.size(), 4u);
  EXPECT_EQ(config->policy.layers[3].mode, LayerMode::kShadow);
  EXPECT_TRUE(config->server.access_log);
  EXPECT_TRUE(config->server.dashboard);
}

// A mistyped backend URL is named in the error with its password masked, as in every log line.
TEST(ConfigParse, AMistypedBackendUrlKeepsItsPasswordOutOfTheError) {
  for (const char* url : {"redsi://:s3cret@127.0.0.1:6379", "redis//user:s3cret@host:6379"}) {
    Result<Config> config = parse_config(std::string("backend:\n  url: ") + url + "\n");
    ASSERT_FALSE(config.has_value()) << url;
    EXPECT_EQ(config.error().message.find("s3cret"), std::string::npos) << config.error().message;
    EXPECT_NE(config.error().message.find("is not a backend URL"), std::string::npos)
        << config.error().message;
  }
}

TEST(ConfigParse, CircuitBreakerFields) {
  Result<Config> config = parse_config("backend:\n  breaker_failures: 0\n  breaker_probe: 250ms\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.breaker_failures, 0);
  EXPECT_EQ(config->backend.breaker_probe, std::chrono::milliseconds(250));
  EXPECT_EQ(default_config().backend.breaker_failures, 5);
  Result<Config> negative = parse_config("backend:\n  breaker_failures: -1\n");
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.error().message.find("backend.breaker_failures"), std::string::npos)
      << negative.error().message;
  Result<Config> fraction = parse_config("backend:\n  breaker_probe: 1500us\n");
  ASSERT_FALSE(fraction.has_value());
  EXPECT_NE(fraction.error().message.find("whole milliseconds"), std::string::npos)
      << fraction.error().message;
}

TEST(ConfigParse, OnErrorLocalAndTls) {
  Result<Config> config = parse_config(R"(backend:
  url: rediss://redis.internal:6380/0
  on_error: local
  tls:
    ca_file: /etc/ca.pem
    cert_file: /etc/client.pem
    key_file: /etc/client.key
    server_name: redis.internal
    insecure: false
)");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.on_error, OnError::kLocal);
  ASSERT_TRUE(config->backend.tls);
  EXPECT_EQ(*config->backend.tls, (TlsConfig{.ca_file = "/etc/ca.pem",
                                             .cert_file = "/etc/client.pem",
                                             .key_file = "/etc/client.key",
                                             .server_name = "redis.internal",
                                             .insecure = false}));
  EXPECT_FALSE(default_config().backend.tls);
  for (const char* url : {"redis+sentinel://10.0.0.1:26379,10.0.0.2/cache/1",
                          "rediss+cluster://10.0.0.1:7000", "rediss://h:6380"}) {
    Result<Config> other = parse_config(std::string("backend:\n  url: ") + url + "\n");
    ASSERT_TRUE(other.has_value()) << url << ": " << other.error().message;
    EXPECT_EQ(other->backend.url, url);
  }
}

TEST(ConfigErrors, TlsMistakesAreNamed) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"backend:\n  url: redis://h:1\n  tls: {ca_file: /ca.pem}\n",
            "line 3: backend.tls: is set but backend.url is not rediss://"},
           {"backend:\n  url: rediss://h:1\n  tls: {cert_file: /c.pem}\n",
            "cert_file and key_file go together"},
           {"backend:\n  url: rediss://h:1\n  tls: {insecure: maybe}\n",
            "backend.tls.insecure: \"maybe\" must be true or false"},
           {"backend:\n  url: rediss://h:1\n  tls: {ca: /ca.pem}\n",
            "backend.tls.ca: unknown field"},
           {"backend:\n  url: rediss://h:1\n  tls: /ca.pem\n", "backend.tls"},
           {"backend:\n  on_error: fallback\n", "must be allow, deny or local"},
       }) {
    Result<Config> config = parse_config(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << text << " -> " << config.error().message;
  }
}

TEST(ConfigParse, OtherValidForms) {
  Result<Config> config = parse_config(R"(server:
  listen: "[::1]:9090"
  threads: 256
  trusted_proxies: ["fd00::/8"]
  ipv6_prefix: 56
  access_log: off
backend:
  url: unix:///run/redis.sock
  timeout: 2s
  on_error: allow
layers:
  - name: tb_1
    key: [ip, "user-id"]
    algorithm: token_bucket
    burst: 5
    limit: 10/30s
  - name: fw
    key:
      - endpoint
    algorithm: fixed_window
    by_endpoint:
      attribute: path
      limits:
        /a/b: 1/s
  - name: plans
    key: [tenant]
    algorithm: sliding_window
    by_plan:
      attribute: tenant
      default: basic
      plans:
        basic: 100/hour
)");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.listen, "[::1]:9090");
  EXPECT_EQ(config->server.threads, 256);
  ASSERT_EQ(config->server.trusted_proxies.size(), 1u);
  EXPECT_EQ(config->server.trusted_proxies[0], cidr("fd00::/8"));
  EXPECT_EQ(config->server.ipv6_prefix, 56);
  EXPECT_FALSE(config->server.access_log);
  EXPECT_TRUE(default_config().server.access_log);
  EXPECT_EQ(config->backend.url, "unix:///run/redis.sock");
  EXPECT_EQ(config->backend.timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(config->backend.on_error, OnError::kAllow);
  ASSERT_EQ(config->policy.layers.size(), 3u);
  const LayerSpec& tb = config->policy.layers[0];
  EXPECT_EQ(tb.algorithm, Algorithm::kTokenBucket);
  EXPECT_EQ(tb.key, (std::vector<std::string>{"ip", "user-id"}));
  EXPECT_EQ(tb.limit, (RateSpec{.limit = 10, .period = 30 * kMicrosPerSecond, .burst = 5}));
  const LayerSpec& fw = config->policy.layers[1];
  EXPECT_EQ(fw.algorithm, Algorithm::kFixedWindow);
  ASSERT_TRUE(fw.by_endpoint.has_value());
  EXPECT_EQ(fw.by_endpoint->attribute, "path");
  EXPECT_EQ(fw.by_endpoint->limits.at("/a/b"), (RateSpec{.limit = 1, .period = kMicrosPerSecond}));
  const LayerSpec& plans = config->policy.layers[2];
  ASSERT_TRUE(plans.by_plan.has_value());
  EXPECT_EQ(plans.by_plan->attribute, "tenant");
  EXPECT_EQ(plans.by_plan->default_plan, "basic");
  EXPECT_TRUE(plans.by_plan->assignments.empty());
}

struct BadConfig {
  const char* name;
  std::string yaml;
  int line;
  std::string field;    // must appear in the message (often the field path)
  std::string mention;  // and this too (a quoted bad value or the reason)
};

// A valid config with one line replaced, so that the line number of the error is known.
std::string example_with(std::string_view line_from, std::string_view line_to) {
  std::string text(kExample);
  const std::size_t at = text.find(line_from);
  EXPECT_NE(at, std::string::npos) << line_from;
  if (at != std::string::npos) text.replace(at, line_from.size(), line_to);
  return text;
}

TEST(ConfigErrors, NameTheLineAndTheField) {
  const std::vector<BadConfig> cases = {
      {"typo field", example_with("limit: 1000/min", "limt: 1000/min"), 15, "layers[0].limt",
       "unknown field"},
      {"bad rate", example_with("limit: 1000/min", "limit: 60/mn"), 15, "layers[0].limit",
       "\"60/mn\""},
      {"bad plan rate", example_with("pro: 600/min}", "pro: 600/mon}"), 22,
       "layers[1].by_plan.plans.pro", "\"600/mon\""},
      {"duplicate layer names", example_with("name: endpoint", "name: edge"), 24, "layers[2].name",
       "\"edge\""},
      {"burst with fixed_window", example_with("algorithm: gcra", "algorithm: fixed_window"), 16,
       "layers[0].burst", "fixed_window"},
      {"burst zero", example_with("burst: 1000", "burst: 0"), 16, "layers[0].burst", "\"0\""},
      {"unknown algorithm", example_with("algorithm: gcra", "algorithm: leaky"), 14,
       "layers[0].algorithm", "\"leaky\""},
      {"default not a plan", example_with("default: free", "default: gold"), 21,
       "layers[1].by_plan.default", "\"gold\""},
      {"key assigned to no plan", example_with("k2: free}", "k2: silver}"), 23,
       "layers[1].by_plan.keys.k2", "\"silver\""},
      {"two selectors", example_with("    burst: 1000", "    by_endpoint: {limits: {/a: 1/s}}"), 16,
       "layers[0].by_endpoint", "only one of"},
      {"zero selectors", example_with("    limit: 1000/min\n", ""), 12, "layers[0]",
       "needs one of limit, by_plan or by_endpoint"},
      {"listen port too large", example_with("127.0.0.1:8080", "127.0.0.1:65536"), 2,
       "server.listen", "\"127.0.0.1:65536\""},
      {"listen without port", example_with("127.0.0.1:8080", "localhost"), 2, "server.listen",
       "host:port"},
      {"unbracketed IPv6 listen", example_with("127.0.0.1:8080", "\"::1:8080\""), 2,
       "server.listen", "brackets"},
      {"threads 0", example_with("threads: 2", "threads: 0"), 3, "server.threads", "\"0\""},
      {"threads not a number", example_with("threads: 2", "threads: two"), 3, "server.threads",
       "whole number"},
      {"bad trusted proxy", example_with("10.0.0.0/8]", "10.0.0.0/33]"), 4,
       "server.trusted_proxies[1]", "\"10.0.0.0/33\""},
      {"ipv6_prefix out of range", example_with("ipv6_prefix: 64", "ipv6_prefix: 129"), 5,
       "server.ipv6_prefix", "\"129\""},
      {"access_log maybe", example_with("ipv6_prefix: 64", "ipv6_prefix: 64\n  access_log: maybe"),
       6, "server.access_log", "\"maybe\""},
      {"on_error maybe", example_with("on_error: deny", "on_error: maybe"), 10, "backend.on_error",
       "\"maybe\""},
      {"bad backend url", example_with("url: memory", "url: mysql://db"), 7, "backend.url",
       "\"mysql://db\""},
      {"bad timeout", example_with("timeout: 50ms", "timeout: 50 parsecs"), 9, "backend.timeout",
       "\"50 parsecs\""},
      {"empty key_prefix", example_with("key_prefix: spillway", "key_prefix: \"\""), 8,
       "backend.key_prefix", "empty"},
      {"unknown top-level key", example_with("backend:", "backends:"), 6, "backends",
       "unknown field"},
      {"unknown server field", example_with("threads: 2", "thread: 2"), 3, "server.thread",
       "unknown field"},
      {"YAML syntax error",
       example_with("plans: {free: 60/min, pro: 600/min}", "plans: {free: 60/min, pro: 600/min"),
       22, "", "unclosed '{'"},
      {"key list empty", example_with("key: [ip]", "key: []"), 13, "layers[0].key", "at least one"},
      {"key not a list", example_with("key: [ip]", "key: ip"), 13, "layers[0].key", "list"},
      {"bad attribute name", example_with("key: [ip]", "key: [ip, \"a b\"]"), 13,
       "layers[0].key[1]", "\"a b\""},
      {"endpoint not starting with /", example_with("/export: 5/min", "export: 5/min"), 28,
       "layers[2].by_endpoint.limits.export", "'/'"},
      {"no plans", example_with("plans: {free: 60/min, pro: 600/min}", "plans: {}"), 22,
       "layers[1].by_plan.plans", "at least one plan"},
      {"no endpoints", example_with("limits: {/search: 10/min, /export: 5/min}", "limits: {}"), 28,
       "layers[2].by_endpoint.limits", "at least one"},
      {"missing name", example_with("  - name: gateway\n    key", "  - key"), 17, "layers[1]",
       "missing field name"},
      {"bad layer name", example_with("name: edge", "name: \"edge layer\""), 12, "layers[0].name",
       "\"edge layer\""},
      {"unknown by_plan field", example_with("keys: {k1: pro", "key: {k1: pro"), 23,
       "layers[1].by_plan.key", "unknown field"},
      {"layers empty", "server:\n  threads: 2\nlayers: []\n", 3, "layers", "non-empty"},
      {"layers null", "layers:\n", 1, "layers", "non-empty"},
      {"empty value points at its key", "server:\n  listen:\n\n  # comment\n  threads: 2\n", 2,
       "server.listen", "empty"},
      {"duplicate field", example_with("  threads: 2\n", "  threads: 2\n  threads: 3\n"), 4,
       "server.threads", "twice"},
      {"rate beyond exact range", example_with("limit: 1000/min", "limit: 9000000000000000/min"),
       15, "layers[0].limit", "2^52"},
      {"server not a mapping", "server: 5\n", 1, "server", "mapping"},
      // The error names the "---" line that starts the second document (kExample is 28 lines).
      {"two documents", std::string(kExample) + "---\nserver: {}\n", 29, "", "one YAML document"},
      {"not a mapping", ",\n", 1, "", "must be a mapping"},
  };
  for (const BadConfig& c : cases) {
    Result<Config> config = parse_config(c.yaml);
    ASSERT_FALSE(config.has_value()) << c.name;
    const std::string& message = config.error().message;
    const std::string prefix = "line " + std::to_string(c.line) + ": ";
    EXPECT_TRUE(message.starts_with(prefix)) << c.name << ": " << message;
    if (!c.field.empty()) {
      EXPECT_TRUE(message.starts_with(prefix + c.field + ": ")) << c.name << ": " << message;
    }
    EXPECT_NE(message.find(c.mention), std::string::npos) << c.name << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.name << ": " << message;
  }
}

TEST(ConfigParse, KeyHashDefaultsToSha256AndASecretFileMeansHmac) {
  Result<Config> config = parse_config("backend:\n  url: redis://h:1\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.key_hash, KeyHash::kSha256);
  EXPECT_EQ(config->backend.key_secret_file, "");
  config = parse_config("backend:\n  key_secret_file: /etc/spillway/key\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.key_hash, KeyHash::kHmacSha256);
  EXPECT_EQ(config->backend.key_secret_file, "/etc/spillway/key");
  config = parse_config("backend:\n  key_hash: none\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.key_hash, KeyHash::kNone);
  config = parse_config("backend:\n  key_hash: hmac-sha256\n  key_secret_file: /k\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.key_hash, KeyHash::kHmacSha256);
}

TEST(ConfigErrors, KeyHashMistakesAreNamed) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"backend:\n  key_hash: md5\n",
            "line 2: backend.key_hash: \"md5\" must be sha256, hmac-sha256 or none"},
           {"backend:\n  key_hash: hmac-sha256\n",
            "line 2: backend.key_hash: hmac-sha256 needs backend.key_secret_file (a file of at "
            "least 16 secret bytes"},
           {"backend:\n  key_hash: none\n  key_secret_file: /k\n",
            "line 3: backend.key_secret_file: is only used with key_hash: hmac-sha256, and "
            "key_hash is none"},
           {"backend:\n  key_secret_file: \"\"\n", "backend.key_secret_file: must not be empty"},
           {"backend:\n  key_hash: sha256\n  key_secret_file: /k\n",
            "line 3: backend.key_secret_file: is only used with key_hash: hmac-sha256, and "
            "key_hash is sha256"},
       }) {
    Result<Config> config = parse_config(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << text << " -> " << config.error().message;
  }
}

TEST(ConfigErrors, ExactMessages) {
  Result<Config> config = parse_config("layers:\n  - name: a\n    key: [ip]\n    limit: 60/mn\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message,
            "line 4: layers[0].limit: rate \"60/mn\" has no valid period after '/' (use sec, min, "
            "hour, day or a duration such as 30s)");
  config = parse_config("layers:\n  - name: a\n    key: [ip]\n    limt: 60/min\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message,
            "line 4: layers[0].limt: unknown field (expected name, key, algorithm, limit, burst, "
            "max_delay, by_plan, by_endpoint, mode, cost, sync, lease, reserve, hold_ttl)");
  config = parse_config("colour: blue\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(
      config.error().message,
      "line 1: colour: unknown field (expected server, backend, priority, layers, rls, tenants)");
}

TEST(ConfigErrors, YamlSyntaxErrorsKeepTheParserMessage) {
  Result<Config> config = parse_config("server:\n  listen: [::1]:8080\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(config.error().message.starts_with("line 2: ")) << config.error().message;
  config = parse_config("server:\n  threads: 2\n threads: 3\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(config.error().message.starts_with("line 3: ")) << config.error().message;
  config = parse_config("a: 'unterminated\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(config.error().message.starts_with("line ")) << config.error().message;
  config = parse_config("just a string\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message,
            "line 1: the config must be a mapping with server, backend and layers, not a single "
            "value");
}

// Found by fuzz/config_fuzz.cc: a key, a value or a YAML parser message holding a control
// character made a message of several lines (or one cut short by a NUL).
TEST(ConfigErrors, ControlCharactersAreEscapedSoMessagesStayOneLine) {
  Result<Config> config = parse_config("laye\rrs: []\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message,
            "line 1: laye\\x0drs: unknown field (expected server, backend, priority, layers, rls, "
            "tenants)");
  config = parse_config("layers:\n  - name: a\n    key: [ip]\n    algorithm: \"gc\\nra\"\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_TRUE(
      config.error().message.starts_with("line 4: layers[0].algorithm: algorithm \"gc\\x0ara\""))
      << config.error().message;
  config = parse_config(std::string_view("a: \"\\\0\"\n", 8));
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message.find_first_of(std::string_view("\r\n\0", 3)), std::string::npos)
      << config.error().message;
  EXPECT_NE(config.error().message.find("\\x00"), std::string::npos) << config.error().message;
}

TEST(ConfigErrors, NothingThrowsOnOddInput) {
  for (std::string_view text :
       {std::string_view("layers: ~\n"), std::string_view("layers:\n  - ~\n"),
        std::string_view("layers:\n  - []\n"), std::string_view("? [a]\n: b\n"),
        std::string_view("server: &s {threads: 2}\nbackend: *s\n"), std::string_view("*x\n"),
        std::string_view("\t\tfoo: bar\n"), std::string_view("server:\n  listen:\n"),
        std::string_view("layers:\n  - name: a\n    key: [ip]\n    by_plan: x\n"),
        std::string_view("layers:\n  - name: a\n    key: [[ip]]\n    limit: 1/s\n"),
        std::string_view("\0\0", 2), std::string_view("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[")}) {
    Result<Config> config = parse_config(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_TRUE(config.error().message.starts_with("line ")) << config.error().message;
  }
}

TEST(ConfigLoad, ReadsAFileAndNamesAnUnreadablePath) {
  const std::string path =
      ::testing::TempDir() + "/config_test_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << kExample;
  Result<Config> config = load_config_file(path);
  std::remove(path.c_str());
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->policy.layers.size(), 3u);

  const std::string missing = path + ".missing";
  Result<Config> absent = load_config_file(missing);
  ASSERT_FALSE(absent.has_value());
  EXPECT_NE(absent.error().message.find(missing), std::string::npos) << absent.error().message;
}

TEST(ConfigRls, TheGrpcListenerAndItsRulesAreRead) {
  Result<Config> config = parse_config(R"(server:
  grpc_listen: 127.0.0.1:8081
backend:
  over_limit_cache: 5000
rls:
  config: /etc/ratelimit/config
  charge_on_deny: true
  response_headers: x-ratelimit
  on_error: deny
  watch: 250ms
)");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.grpc_listen, "127.0.0.1:8081");
  EXPECT_EQ(config->backend.over_limit_cache, 5000u);
  EXPECT_EQ(config->rls.config, "/etc/ratelimit/config");
  EXPECT_TRUE(config->rls.charge_on_deny);
  EXPECT_EQ(config->rls.response_headers, RlsHeaders::kXRateLimit);
  EXPECT_EQ(config->rls.on_error, RlsOnError::kDeny);
  EXPECT_EQ(config->rls.watch, std::chrono::milliseconds(250));

  Result<Config> defaults = parse_config("rls: {config: rules.yaml, watch: off}\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_EQ(defaults->server.grpc_listen, "");
  EXPECT_EQ(defaults->backend.over_limit_cache, 0u);
  EXPECT_FALSE(defaults->rls.charge_on_deny);
  EXPECT_EQ(defaults->rls.response_headers, RlsHeaders::kOff);
  EXPECT_EQ(defaults->rls.on_error, RlsOnError::kError);
  EXPECT_EQ(defaults->rls.watch, std::chrono::milliseconds(0));
}

// Each text is refused, with an error that starts as given (line and field first).
void expect_config_refused(std::span<const std::pair<const char*, const char*>> cases) {
  for (const auto& [text, expected] : cases) {
    Result<Config> config = parse_config(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_TRUE(config.error().message.starts_with(expected))
        << text << " -> " << config.error().message;
  }
}

TEST(ConfigRls, BadValuesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"server: {grpc_listen: 'nowhere'}\n", "line 1: server.grpc_listen: "},
      {"rls: {response_headers: maybe}\n",
       "line 1: rls.response_headers: \"maybe\" must be one of off, draft, x-ratelimit"},
      {"rls: {on_error: panic}\n",
       "line 1: rls.on_error: \"panic\" must be one of error, allow, deny"},
      {"rls: {charge_on_deny: sometimes}\n", "line 1: rls.charge_on_deny: "},
      {"rls: {config: ''}\n", "line 1: rls.config: must not be empty"},
      {"rls: {watch: 1.5ms}\n", "line 1: rls.watch: "},
      {"rls: {colour: red}\n", "line 1: rls.colour: unknown field"},
      {"backend: {over_limit_cache: -1}\n", "line 1: backend.over_limit_cache: "},
  };
  expect_config_refused(cases);
}

TEST(ConfigBackend, RedisBatchingKnobsAreReadAndBounded) {
  Result<Config> config =
      parse_config("backend: {url: 'redis://127.0.0.1:6379', max_batch: 256, max_in_flight: 8}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend.max_batch, 256);
  EXPECT_EQ(config->backend.max_in_flight, 8);

  Result<Config> defaults = parse_config("backend: {url: 'redis://127.0.0.1:6379'}\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_FALSE(defaults->backend.max_batch.has_value());
  EXPECT_FALSE(defaults->backend.max_in_flight.has_value());

  const std::pair<const char*, const char*> cases[] = {
      {"backend: {max_batch: 0}\n", "line 1: backend.max_batch: "},
      {"backend: {max_batch: 4097}\n", "line 1: backend.max_batch: "},
      {"backend: {max_batch: lots}\n", "line 1: backend.max_batch: "},
      {"backend: {max_in_flight: -2}\n", "line 1: backend.max_in_flight: "},
      {"backend: {max_in_flight: 1.5}\n", "line 1: backend.max_in_flight: "},
  };
  expect_config_refused(cases);
}

TEST(ConfigBackend, DurabilityIsAsyncOrReplicated) {
  Result<Config> replicated =
      parse_config("backend: {url: 'redis://127.0.0.1:6379', durability: replicated}\n");
  ASSERT_TRUE(replicated.has_value()) << replicated.error().message;
  EXPECT_EQ(replicated->backend.replica_acks, 1);
  Result<Config> async =
      parse_config("backend: {url: 'redis://127.0.0.1:6379', durability: async}\n");
  ASSERT_TRUE(async.has_value()) << async.error().message;
  EXPECT_EQ(async->backend.replica_acks, 0);
  Result<Config> defaults = parse_config("backend: {url: 'redis://127.0.0.1:6379'}\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_EQ(defaults->backend.replica_acks, 0);
  const std::pair<const char*, const char*> cases[] = {
      {"backend: {durability: sometimes}\n",
       "line 1: backend.durability: \"sometimes\" must be async or replicated"},
      {"backend: {durability: 1}\n", "line 1: backend.durability: "},
      {"backend: {durability: [replicated]}\n", "line 1: backend.durability: "},
  };
  expect_config_refused(cases);
}

TEST(ConfigServer, MaxReservationsIsReadAndBounded) {
  Result<Config> config = parse_config("server:\n  max_reservations: 2500\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.max_reservations, 2500);
  Result<Config> defaults = parse_config("server: {}\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_EQ(defaults->server.max_reservations, 1'000'000);
  const std::pair<const char*, const char*> cases[] = {
      {"server:\n  max_reservations: 0\n", "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: -5\n", "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: many\n", "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: 1.5\n", "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: 100000001\n", "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: 99999999999999999999999\n",
       "line 2: server.max_reservations: "},
      {"server:\n  max_reservations: [1]\n", "line 2: server.max_reservations: "},
  };
  expect_config_refused(cases);
}

}  // namespace
}  // namespace spillway::policy

namespace spillway::policy {
namespace {

TEST(ConfigParse, LayerModeIsEnforceOrShadow) {
  const std::string layer = "layers:\n  - name: edge\n    key: [ip]\n    limit: 10/min\n";
  Result<Config> plain = parse_config(layer);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->policy.layers[0].mode, LayerMode::kEnforce);
  Result<Config> shadow = parse_config(layer + "    mode: shadow\n");
  ASSERT_TRUE(shadow) << shadow.error().message;
  EXPECT_EQ(shadow->policy.layers[0].mode, LayerMode::kShadow);
  Result<Config> bad = parse_config(layer + "    mode: dry-run\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 5: layers[0].mode"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("enforce or shadow"), std::string::npos);
}

TEST(ConfigParse, ALayerTakesItsCostFromAnAttribute) {
  const std::string layer = "layers:\n  - name: tpm\n    key: [api_key]\n    limit: 10000/min\n";
  Result<Config> plain = parse_config(layer);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->policy.layers[0].cost, "");
  Result<Config> tokens = parse_config(layer + "    cost: tokens\n");
  ASSERT_TRUE(tokens) << tokens.error().message;
  EXPECT_EQ(tokens->policy.layers[0].cost, "tokens");
  Result<Config> bad = parse_config(layer + "    cost: \"to kens\"\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 5: layers[0].cost"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("letters, digits"), std::string::npos);
  Result<Config> list = parse_config(layer + "    cost: [tokens]\n");
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().message.find("layers[0].cost"), std::string::npos) << list.error().message;
}

}  // namespace
}  // namespace spillway::policy

namespace spillway::policy {
namespace {

TEST(ConfigParse, DashboardSwitchAndKeyMasking) {
  Result<Config> plain = parse_config("server:\n  listen: 127.0.0.1:9000\n");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_TRUE(plain->server.dashboard);
  EXPECT_TRUE(plain->server.dashboard_mask_keys);
  Result<Config> set = parse_config("server:\n  dashboard: off\n  dashboard_keys: clear\n");
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_FALSE(set->server.dashboard);
  EXPECT_FALSE(set->server.dashboard_mask_keys);
  Result<Config> bad = parse_config("server:\n  dashboard: maybe\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2: server.dashboard"), std::string::npos)
      << bad.error().message;
  Result<Config> bad_keys = parse_config("server:\n  dashboard_keys: hidden\n");
  ASSERT_FALSE(bad_keys);
  EXPECT_NE(bad_keys.error().message.find("server.dashboard_keys"), std::string::npos);
  EXPECT_NE(bad_keys.error().message.find("masked or clear"), std::string::npos);
}

// A bad field does not hide the next one, nor a bad section or layer the next: one run names
// every mistake, one line each, in file order.
TEST(ConfigErrors, EveryErrorIsReportedOneLineEach) {
  Result<Config> config = parse_config(
      "layers:\n"
      "  - name: a\n"
      "    key: [ip]\n"
      "    algorithm: leaky\n"  // 4
      "    limit: 1/s\n"
      "  - name: a\n"       // 6: used by layers[0] too
      "    key: []\n"       // 7
      "    limit: 60/mn\n"  // 8
      "    colour: blue\n"  // 9
      "  - name: c\n"
      "    key: [ip]\n"
      "    by_plan:\n"
      "      default: free\n"
      "      plans: {free: 1/mn, pro: 2/min}\n"  // 14
      "server:\n"
      "  threads: 0\n"         // 16
      "  listen: nowhere\n"    // 17
      "  access_log: maybe\n"  // 18
      "  threads: 3\n"         // 19: given twice
      "backend:\n"
      "  url: mysql://db\n"         // 21
      "  on_error: maybe\n"         // 22
      "  tls: {insecure: maybe}\n"  // 23 (no complaint about the URL: it was reported)
      "rls:\n"
      "  charge_on_deny: perhaps\n"  // 25
      "  watch: 1 fortnight\n"       // 26
      "colour: blue\n");             // 27
  ASSERT_FALSE(config.has_value());
  std::vector<std::string> lines;
  std::istringstream text(config.error().message);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  const std::vector<std::string> expected = {
      "line 4: layers[0].algorithm: ",
      "line 6: layers[1].name: ",
      "line 7: layers[1].key: ",
      "line 8: layers[1].limit: ",
      "line 9: layers[1].colour: ",
      "line 14: layers[2].by_plan.plans.free: ",
      "line 16: server.threads: ",
      "line 17: server.listen: ",
      "line 18: server.access_log: ",
      "line 19: server.threads: ",
      "line 21: backend.url: ",
      "line 22: backend.on_error: ",
      "line 23: backend.tls.insecure: ",
      "line 25: rls.charge_on_deny: ",
      "line 26: rls.watch: ",
      "line 27: colour: ",
  };
  ASSERT_EQ(lines.size(), expected.size()) << config.error().message;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_TRUE(lines[i].starts_with(expected[i])) << expected[i] << " vs " << lines[i];
  }
}

TEST(ConfigErrors, YamlSyntaxErrorsAreSaidInWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"server:\n\tlisten: 127.0.0.1:8080\n",
       "line 2: a tab character cannot indent YAML (use spaces)"},
      {"server:\n  threads: 2\n\tlisten: 127.0.0.1:8080\n",
       "line 3: a tab character cannot indent YAML (use spaces)"},
      {"server: {threads: 2\nbackend: {}\n", "line 1: unclosed '{' (no '}' closes it)"},
      {"server:\n  trusted_proxies: [10.0.0.0/8\n", "line 2: unclosed '[' (no ']' closes it)"},
      {"backend:\n  url: 'redis://x:1\n", "line 2: unclosed single quote (no ' closes it)"},
      {"backend:\n  url: \"redis://x:1\nlayers: []\n",
       "line 2: unclosed double quote (no \" closes it)"},
      {"server: {threads: 2}}\n", "line 1: a ']' or '}' that closes nothing"},
      {"a: b: c\n", "line 1: unexpected ':'"},
  };
  for (const auto& [yaml, message] : cases) {
    Result<Config> config = parse_config(yaml);
    ASSERT_FALSE(config.has_value()) << yaml;
    EXPECT_TRUE(config.error().message.starts_with(message)) << yaml << config.error().message;
  }
  // Quotes that close, apostrophes inside values, and block scalars are not mistaken for open
  // quotes.
  for (const char* yaml : {"backend: {url: 'memory', key_prefix: \"it's\"}\n",
                           "backend:\n  key_prefix: it's\n  url: memory # it's fine\n",
                           "backend:\n  key_prefix: 'it''s'\n",
                           "backend:\n  key_prefix: |\n    'open\n  url: memory\n"}) {
    EXPECT_TRUE(parse_config(yaml).has_value()) << yaml << parse_config(yaml).error().message;
  }
}

TEST(ConfigParse, EveryBooleanTakesTrueFalseYesNoOnOff) {
  for (const auto& [word, value] : std::vector<std::pair<std::string, bool>>{{"true", true},
                                                                             {"yes", true},
                                                                             {"on", true},
                                                                             {"false", false},
                                                                             {"no", false},
                                                                             {"off", false}}) {
    Result<Config> config =
        parse_config("server:\n  access_log: " + word + "\n  dashboard: " + word +
                     "\nbackend:\n  url: rediss://localhost:6380\n  tls: {insecure: " + word +
                     "}\nrls:\n  charge_on_deny: " + word + "\n");
    ASSERT_TRUE(config.has_value()) << word << ": " << config.error().message;
    EXPECT_EQ(config->server.access_log, value) << word;
    EXPECT_EQ(config->server.dashboard, value) << word;
    EXPECT_EQ(config->backend.tls->insecure, value) << word;
    EXPECT_EQ(config->rls.charge_on_deny, value) << word;
  }
  Result<Config> config = parse_config("rls:\n  charge_on_deny: maybe\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message,
            "line 2: rls.charge_on_deny: \"maybe\" must be true or false (or yes/no, on/off)");
}

// YAML 1.2 core schema's case rule, as in Envoy's rules files: all lower case, capitalised or all
// upper case; any other mix of cases is refused. (Every boolean field has the one reader.)
TEST(ConfigParse, BooleansAreLowerCapitalisedOrUpperCase) {
  const std::pair<const char*, bool> spellings[] = {
      {"True", true}, {"TRUE", true}, {"Yes", true},    {"YES", true},
      {"On", true},   {"ON", true},   {"False", false}, {"FALSE", false},
      {"No", false},  {"NO", false},  {"Off", false},   {"OFF", false}};
  for (const auto& [word, value] : spellings) {
    Result<Config> config = parse_config(std::string("rls: {charge_on_deny: ") + word + "}\n");
    ASSERT_TRUE(config.has_value()) << word << ": " << config.error().message;
    EXPECT_EQ(config->rls.charge_on_deny, value) << word;
  }
  for (const char* word : {"tRUE", "TRue", "fALSE", "yES", "oN", "oFF"}) {
    Result<Config> config = parse_config(std::string("server:\n  access_log: ") + word + "\n");
    ASSERT_FALSE(config.has_value()) << word;
    EXPECT_EQ(config.error().message, "line 2: server.access_log: \"" + std::string(word) +
                                          "\" must be true or false (or yes/no, on/off)");
  }
}

TEST(ConfigParse, RecordsTheLineOfEachField) {
  Result<Config> config = parse_config("# a comment\nbackend:\n  key_prefix: p\n  url: memory\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->lines.of("backend"), 2);
  EXPECT_EQ(config->lines.of("backend.url"), 4);
  EXPECT_EQ(config->lines.of("server.listen"), 0);
}

}  // namespace
}  // namespace spillway::policy
