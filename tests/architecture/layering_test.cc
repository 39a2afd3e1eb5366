// The dependency graph of the source tree (docs/ARCHITECTURE.md), checked on every build:
//   core <- memory, redis (the backends) <- open_store (URL -> store, the wrappers) <- cli
//   core <- policy <- config (the YAML file: server, backend, rls, layers) <- server <- grpc <- cli
//   core <- policy <- config <- rls (Envoy's rules and engine) <- grpc
//   core <- pages (the HTML pages and web assets) <- server, cli
// A file may include headers of its own layer and of the layers below it, never one above: the
// core knows no backend, and neither the policy nor the server knows a backend or open_store, so
// a new backend or algorithm is added without touching them. Every #include of every file under
// src/ and include/spillway/ is read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace spillway {
namespace {

namespace fs = std::filesystem;

enum class Layer {
  kCore,
  kMemory,
  kRedis,
  kOpenStore,
  kPolicy,
  kConfig,
  kRls,
  kPages,
  kServer,
  kGrpc,
  kCli
};

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::kCore:
      return "core";
    case Layer::kMemory:
      return "memory";
    case Layer::kRedis:
      return "redis";
    case Layer::kOpenStore:
      return "open_store";
    case Layer::kPolicy:
      return "policy";
    case Layer::kConfig:
      return "config";
    case Layer::kRls:
      return "rls";
    case Layer::kPages:
      return "pages";
    case Layer::kServer:
      return "server";
    case Layer::kGrpc:
      return "grpc";
    case Layer::kCli:
      return "cli";
  }
  return "?";
}

// What each layer may include besides itself.
const std::map<Layer, std::set<Layer>>& allowed() {
  static const std::map<Layer, std::set<Layer>> rules = {
      {Layer::kCore, {}},
      {Layer::kMemory, {Layer::kCore}},
      {Layer::kRedis, {Layer::kCore}},
      {Layer::kOpenStore, {Layer::kCore, Layer::kMemory, Layer::kRedis}},
      {Layer::kPolicy, {Layer::kCore}},
      {Layer::kConfig, {Layer::kCore, Layer::kPolicy}},
      {Layer::kRls, {Layer::kCore, Layer::kPolicy, Layer::kConfig}},
      {Layer::kPages, {Layer::kCore}},
      {Layer::kServer, {Layer::kCore, Layer::kPolicy, Layer::kConfig, Layer::kPages}},
      {Layer::kGrpc, {Layer::kCore, Layer::kPolicy, Layer::kConfig, Layer::kRls, Layer::kServer}},
      {Layer::kCli,
       {Layer::kCore, Layer::kMemory, Layer::kRedis, Layer::kOpenStore, Layer::kPolicy,
        Layer::kConfig, Layer::kRls, Layer::kPages, Layer::kServer, Layer::kGrpc}},
  };
  return rules;
}

// The layer of a file or an included header, by its path from the repository's root
// ("src/memory/sharded_table.h", "spillway/redis_store.h" as included, or its file
// "include/spillway/redis_store.h"); nullopt for a path of no layer.
std::optional<Layer> layer_of(std::string path) {
  if (path.starts_with("include/")) path.erase(0, 8);
  if (path.starts_with("spillway/")) {
    const std::string header = path.substr(9);
    if (header == "memory_store.h") return Layer::kMemory;
    if (header == "redis_store.h") return Layer::kRedis;
    if (header == "open_store.h" || header == "circuit_breaker.h" || header == "local_fallback.h" ||
        header == "over_limit_cache.h" || header == "lease_store.h") {
      return Layer::kOpenStore;
    }
    if (header == "policy.h" || header == "policy_spec.h" || header == "policy_engine.h") {
      return Layer::kPolicy;
    }
    static const std::set<std::string> core = {
        "algorithm.h",        "algorithm_list.h", "clock.h",
        "decision.h",         "duration.h",       "error.h",
        "key_hash.h",         "limit.h",          "store.h",
        "tenant_directory.h", "tls_options.h",    "reservation.h",
        "ticket.h",           "lease.h",          "quota_shares.h",
        "forwarding_store.h", "runtime.h"};
    if (core.contains(header)) return Layer::kCore;
    return std::nullopt;
  }
  static const std::vector<std::pair<std::string, Layer>> dirs = {
      {"src/core/", Layer::kCore},     {"src/memory/", Layer::kMemory},
      {"src/redis/", Layer::kRedis},   {"src/open_store/", Layer::kOpenStore},
      {"src/policy/", Layer::kPolicy}, {"src/config/", Layer::kConfig},
      {"src/rls/", Layer::kRls},       {"src/pages/", Layer::kPages},
      {"src/server/", Layer::kServer}, {"src/grpc/", Layer::kGrpc},
      {"src/cli/", Layer::kCli},
  };
  for (const auto& [dir, layer] : dirs) {
    if (path.starts_with(dir)) return layer;
  }
  return std::nullopt;
}

// "" when `file` may include `header`, else what is wrong.
std::string violation(const std::string& file, const std::string& header) {
  const std::optional<Layer> from = layer_of(file);
  if (!from) return file + " belongs to no layer";
  const std::optional<Layer> to = layer_of(header);
  if (!to) return file + " includes " + header + ", which belongs to no layer";
  if (*from == *to || allowed().at(*from).contains(*to)) return "";
  return file + " (" + layer_name(*from) + ") includes " + header + " (" + layer_name(*to) +
         "), a layer it must not depend on";
}

// The project's own headers a file includes: "src/…", "spillway/…" and <spillway/…>.
std::vector<std::string> includes_of(const fs::path& file) {
  static const std::regex include(R"(^\s*#\s*include\s*["<]((src|spillway)/[^">]+)[">])");
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, include)) out.push_back(match[1]);
  }
  return out;
}

TEST(Layering, TheCheckerRejectsIncludesThatPointUp) {
  EXPECT_NE(violation("src/core/limit.cc", "spillway/memory_store.h"), "");
  EXPECT_NE(violation("src/core/limit.cc", "src/redis/client.h"), "");
  EXPECT_NE(violation("src/server/service.cc", "spillway/redis_store.h"), "");
  EXPECT_NE(violation("src/server/service.cc", "spillway/open_store.h"), "");
  EXPECT_NE(violation("src/policy/policy_engine.cc", "spillway/memory_store.h"), "");
  EXPECT_NE(violation("src/memory/memory_store.cc", "spillway/redis_store.h"), "");
  EXPECT_NE(violation("include/spillway/store.h", "spillway/memory_store.h"), "");
  EXPECT_NE(violation("src/config/config.cc", "src/server/http_server.h"), "");
  EXPECT_NE(violation("src/policy/policy_engine.cc", "src/config/config.h"), "");
  EXPECT_EQ(violation("src/config/config.cc", "src/policy/routes.h"), "");
  EXPECT_EQ(violation("src/server/service.h", "src/config/config.h"), "");
  EXPECT_NE(violation("src/core/limit.cc", "tests/support/process.h"), "");
  EXPECT_EQ(violation("src/server/service.cc", "spillway/policy_engine.h"), "");
  EXPECT_NE(violation("src/rls/rls_engine.cc", "spillway/redis_store.h"), "");
  EXPECT_NE(violation("src/rls/rls_engine.cc", "src/server/metrics.h"), "");
  EXPECT_EQ(violation("src/grpc/rls_service.cc", "src/rls/rls_engine.h"), "");
  EXPECT_EQ(violation("src/open_store/open_store.cc", "spillway/redis_store.h"), "");
  EXPECT_EQ(violation("src/cli/serve.cc", "spillway/open_store.h"), "");
  EXPECT_EQ(violation("include/spillway/memory_store.h", "spillway/store.h"), "");
  EXPECT_EQ(violation("src/memory/memory_store.cc", "src/core/all_algorithms.h"), "");
}

TEST(Layering, NoSourceFileIncludesALayerAboveItsOwn) {
  const fs::path root = SPILLWAY_SOURCE_DIR;
  int files = 0, edges = 0;
  for (const char* top : {"src", "include/spillway"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() || (extension != ".h" && extension != ".cc")) continue;
      const std::string file = fs::relative(entry.path(), root).generic_string();
      ++files;
      for (const std::string& header : includes_of(entry.path())) {
        ++edges;
        EXPECT_EQ(violation(file, header), "");
      }
    }
  }
  // The walk really read the tree (a wrong root would pass vacuously).
  EXPECT_GT(files, 80);
  EXPECT_GT(edges, 150);
}

}  // namespace
}  // namespace spillway
