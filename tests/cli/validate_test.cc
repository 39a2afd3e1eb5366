// spillway validate FILE: the real binary on good, bad and missing config files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace {

using Outcome = spillway::testing::BinaryRun;
using spillway::testing::run_binary;

// A path unique to this process and call: ctest runs tests in parallel processes.
std::string temp_path(const std::string& suffix) {
  static int calls = 0;
  return ::testing::TempDir() + "/validate_" + std::to_string(getpid()) + "_" +
         std::to_string(calls++) + suffix;
}

// Writes `text` to a fresh config file and returns its path.
std::string write_config(const std::string& text) {
  const std::string path = temp_path(".yaml");
  std::ofstream(path) << text;
  return path;
}

TEST(ValidateBinary, GoodConfigPrintsOkWithTheLayerCount) {
  const std::string path = write_config(
      "server:\n  listen: 127.0.0.1:8080\nlayers:\n  - name: edge\n    key: [ip]\n"
      "    limit: 100/s\n  - name: user\n    key: [user]\n    limit: 10/s\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, path + ": ok (2 layers)\n");
  // "user" is not an attribute GET /v1/auth provides: a warning, not an error.
  EXPECT_EQ(run.err, "spillway validate: " + path +
                         ": warning: line 8: layers[1].key: layer user reads attribute \"user\", "
                         "which GET /v1/auth does not provide (it provides ip, api_key, endpoint, "
                         "method): every /v1/auth request would be a 400; POST /v1/check can send "
                         "it\n");
}

TEST(ValidateBinary, WarnsThatAuthRefusesAConcurrencyLayer) {
  const std::string path = write_config(
      "layers:\n  - name: in_flight\n    key: [api_key]\n    algorithm: concurrency\n"
      "    limit: 20\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, path + ": ok (1 layer)\n");
  EXPECT_EQ(run.err, "spillway validate: " + path +
                         ": warning: line 4: layers[0].algorithm: layer in_flight is a concurrency "
                         "limit: GET /v1/auth refuses (500) every request it applies to, since "
                         "nginx's auth_request has no release step; call POST /v1/check and POST "
                         "/v1/release from the application\n");
}

TEST(ValidateBinary, NoWarningForLayersThatAuthCanMeet) {
  const std::string path = write_config(
      "layers:\n  - {name: edge, key: [ip], limit: 100/s}\n"
      "  - {name: trial, key: [user], limit: 10/s, mode: shadow}\n"
      "  - name: gateway\n    key: [api_key]\n    by_plan: {default: free, plans: {free: 1/s}}\n"
      "  - name: endpoint\n    key: [api_key, endpoint]\n"
      "    by_endpoint: {limits: {/a: 1/s}}\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");  // a shadow layer never refuses a request
}

TEST(ValidateBinary, WarnsOfAnEndpointLayerWhoseKeyLacksTheRoute) {
  const std::string path = write_config(
      "layers:\n  - name: endpoint\n    key: [api_key]\n"
      "    by_endpoint: {limits: {/a: 1/s, /b: 5/s}}\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("warning: line 3: layers[0].key: layer endpoint limits routes but its "
                         "key has no endpoint"),
            std::string::npos)
      << run.err;
}

TEST(ValidateBinary, WarnsOfADelayingLayerWhenNoAnswerMayBeHeld) {
  const std::string yaml =
      "layers:\n  - name: smooth\n    key: [ip]\n    limit: 5/s\n    max_delay: 1s\n";
  const std::string held = write_config(yaml);
  Outcome ok = run_binary("validate " + held);
  std::remove(held.c_str());
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err, "");  // server.max_delayed's default holds 10,000
  const std::string none = write_config("server:\n  max_delayed: 0\n" + yaml);
  Outcome run = run_binary("validate " + none);
  std::remove(none.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("warning: line 7: layers[0].max_delay: layer smooth delays, but "
                         "server.max_delayed is 0: every /v1/auth request it admits after a "
                         "delay is refused (403) and stays charged"),
            std::string::npos)
      << run.err;
}

TEST(ValidateBinary, WarnsOfRoutesOnAnAttributeAuthDoesNotProvide) {
  const std::string path = write_config(
      "layers:\n  - name: endpoint\n    key: [api_key, path]\n"
      "    by_endpoint:\n      attribute: path\n      limits: {/a: 1/s}\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("warning: line 5: layers[0].by_endpoint.attribute: layer endpoint reads "
                         "attribute \"path\""),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("on /v1/auth its routes never match"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("layers[0].key"), std::string::npos) << run.err;  // "path" is the route
}

TEST(ValidateBinary, EmptyFileIsTheBuiltInPolicy) {
  const std::string path = write_config("");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, path + ": ok (3 layers)\n");
}

// An empty or comments-only file is the built-in policy, with a warning naming it (a file meant
// to hold a policy would otherwise serve another one silently).
TEST(ValidateBinary, AnEmptyOrCommentsOnlyFileWarnsNamingTheBuiltInPolicy) {
  for (const char* text : {"", "# only a comment\n\n# another\n"}) {
    const std::string path = write_config(text);
    Outcome run = run_binary("validate " + path);
    std::remove(path.c_str());
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("spillway validate: " + path +
                           ": warning: the file sets nothing (it is empty or only comments): the "
                           "built-in policy applies"),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("layers edge, gateway, endpoint"), std::string::npos) << run.err;
  }
}

// Relative file paths in a config are relative to the config file's directory, not to the
// working directory: the same file validates from anywhere.
TEST(ValidateBinary, RelativePathsAreTheConfigFilesDirectorys) {
  const std::string dir = temp_path("_relative");
  std::filesystem::create_directories(dir + "/rules");
  std::ofstream(dir + "/tokens") << "ops validate-relative-token-0123456789\n";
  std::filesystem::permissions(
      dir + "/tokens", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::ofstream(dir + "/rules/edge.yaml")
      << "domain: edge\ndescriptors:\n  - key: remote_address\n"
         "    rate_limit: {unit: minute, requests_per_unit: 10}\n";
  std::ofstream(dir + "/spillway.yaml")
      << "server:\n  admin_listen: 127.0.0.1:0\n  admin_token_file: tokens\n"
         "  grpc_listen: 127.0.0.1:0\n"
         "rls:\n  config: rules\n"
         "layers:\n  - {name: edge, key: [ip], limit: 10/s}\n";
  // The working directory is the test's, not `dir`: "tokens" and "rules" are not there.
  ASSERT_FALSE(std::filesystem::exists("tokens"));
  Outcome run = run_binary("validate " + dir + "/spillway.yaml");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, dir + "/spillway.yaml: ok (1 layer)\n") << run.err;
  // A path that is not there is named as resolved: the config's directory, then the name.
  std::ofstream(dir + "/missing.yaml")
      << "server:\n  admin_listen: 127.0.0.1:0\n  admin_token_file: no-such-tokens\n";
  Outcome missing = run_binary("validate " + dir + "/missing.yaml");
  EXPECT_EQ(missing.status, 1);
  const std::string resolved =
      (std::filesystem::path(dir) / "no-such-tokens").lexically_normal().string();
  EXPECT_NE(missing.err.find("\"" + resolved + "\" cannot be read"), std::string::npos)
      << missing.err;
  std::filesystem::remove_all(dir);
}

TEST(ValidateBinary, BadConfigNamesTheLineAndFieldAndFails) {
  const std::string path = write_config(
      "backend:\n  url: memory\nlayers:\n  - name: edge\n    key: [ip]\n    limit: 60/mn\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + path + ": line 6: layers[0].limit: "))
      << run.err;
  EXPECT_NE(run.err.find("\"60/mn\""), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;  // one line
}

TEST(ValidateBinary, ABadTenantsUntilLoadedNamesTheLineAndField) {
  const std::string good = write_config("tenants:\n  until_loaded: defaults\n");
  Outcome accepted = run_binary("validate " + good);
  std::remove(good.c_str());
  EXPECT_EQ(accepted.status, 0) << accepted.err;
  const std::string path =
      write_config("backend:\n  url: memory\ntenants:\n  until_loaded: allow\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "spillway validate: " + path +
                         ": line 4: tenants.until_loaded: \"allow\" must be deny or defaults\n");
}

TEST(ValidateBinary, MissingFileFailsNamingThePath) {
  const std::string path = temp_path("_missing.yaml");
  Outcome run = run_binary("validate " + path);
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + path + ": ")) << run.err;
}

TEST(ValidateBinary, BadArgumentsExitTwoWithOneLine) {
  for (const std::string args :
       {"validate", "validate a.yaml b.yaml", "validate --strict a.yaml"}) {
    Outcome run = run_binary(args);
    EXPECT_EQ(run.status, 2) << args;
    EXPECT_TRUE(run.err.starts_with("spillway validate: ")) << args << ": " << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
  }
}

TEST(ValidateBinary, RlsRulesAreCheckedAsServeLoadsThem) {
  const std::string good = write_config(
      "domain: validate_rls\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n"
      "      requests_per_unit: 10\n");
  Outcome run = run_binary("validate --rls " + good);
  std::remove(good.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, good + ": ok (1 domain: validate_rls)\n");

  const std::string bad = write_config(
      "domain: validate_rls\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n"
      "      requests_per_unit: 10\n      shadow: true\n");
  run = run_binary("validate --rls " + bad);
  std::remove(bad.c_str());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + bad +
                                  ": line 7: descriptors[0].rate_limit.shadow: unknown field"))
      << run.err;

  run = run_binary("validate --rls " + good + " extra");
  EXPECT_EQ(run.status, 2);
}

// Each of these passed validate before and then stopped `serve`: validate runs serve's checks
// short of binding and connecting (src/cli/preflight.h).
TEST(ValidateBinary, RefusesWhatServeRefuses) {
  struct Case {
    std::string yaml;
    std::string located;  // "line N: path: "
    std::string mention;
  };
  const std::vector<Case> cases = {
      {"backend:\n  url: redis://localhost:63a9\n", "line 2: backend.url: ", "63a9"},
      {"backend:\n  url: redis://localhost:99999\n", "line 2: backend.url: ", "99999"},
      {"server:\n  grpc_listen: 127.0.0.1:0\n", "line 2: server.grpc_listen: ", "needs rules"},
      {"rls:\n  config: /nonexistent/rules\n", "line 2: rls.config: ", "/nonexistent/rules"},
      {"backend:\n  url: rediss://localhost:6380\n  tls:\n    ca_file: /nonexistent/ca.pem\n",
       "line 3: backend.tls: ", "/nonexistent/ca.pem"},
      {"backend:\n  url: redis+sentinel://localhost:26379\n", "line 2: backend.url: ", ""},
  };
  for (const Case& c : cases) {
    const std::string path = write_config(c.yaml);
    Outcome run = run_binary("validate " + path);
    std::remove(path.c_str());
    EXPECT_EQ(run.status, 1) << c.yaml << run.out;
    EXPECT_EQ(run.out, "") << c.yaml;
    EXPECT_TRUE(run.err.starts_with("spillway validate: " + path + ": " + c.located))
        << c.yaml << run.err;
    EXPECT_NE(run.err.find(c.mention), std::string::npos) << c.yaml << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << c.yaml << run.err;  // one error
  }
}

TEST(ValidateBinary, ReportsEveryErrorOfTheFileInOrder) {
  const std::string path = write_config(
      "server:\n"
      "  threads: 0\n"         // 2
      "  access_log: maybe\n"  // 3
      "backend:\n"
      "  url: redis://localhost:63a9\n"  // 5
      "  timeout: 5 parsecs\n"           // 6
      "rls:\n"
      "  config: /nonexistent/rules\n"  // 8
      "layers:\n"
      "  - name: a\n"
      "    key: [ip]\n"
      "    limit: 60/mn\n"  // 12
      "  - name: b\n"
      "    key: [ip]\n"
      "    algorithm: gcra\n"
      "    mode: loud\n"  // 16
      "    limit: 6/min\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 1);
  std::vector<std::string> lines;
  std::istringstream err(run.err);
  for (std::string line; std::getline(err, line);) lines.push_back(line);
  const std::vector<std::string> expected = {
      "line 2: server.threads: ",  "line 3: server.access_log: ", "line 5: backend.url: ",
      "line 6: backend.timeout: ", "line 8: rls.config: ",        "line 12: layers[0].limit: ",
      "line 16: layers[1].mode: "};
  ASSERT_EQ(lines.size(), expected.size()) << run.err;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_TRUE(lines[i].starts_with("spillway validate: " + path + ": " + expected[i]))
        << lines[i];
  }
}

TEST(ValidateBinary, DashReadsStandardInput) {
  Outcome run = run_binary("validate -", "layers:\n  - name: a\n    key: [ip]\n    limit: 1/s\n");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "-: ok (1 layer)\n");
  run = run_binary("validate -", "layers:\n  - name: a\n    key: [ip]\n    limit: 1/mn\n");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(run.err.starts_with("spillway validate: -: line 4: layers[0].limit: ")) << run.err;
}

TEST(ValidateBinary, YamlSyntaxErrorsInWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"server:\n\tlisten: 127.0.0.1:8080\n",
       "line 2: a tab character cannot indent YAML (use spaces)"},
      {"server:\n  threads: 2\nlayers: [{name: a, key: [ip], limit: 1/s}\n",
       "line 3: unclosed '[' (no ']' closes it)"},
      {"backend:\n  url: 'redis://localhost:6379\n", "line 2: unclosed single quote"},
  };
  for (const auto& [yaml, message] : cases) {
    Outcome run = run_binary("validate -", yaml);
    EXPECT_EQ(run.status, 1) << yaml;
    EXPECT_TRUE(run.err.starts_with("spillway validate: -: " + message)) << yaml << run.err;
  }
}

}  // namespace

// The admin API and tenant settings: what serve would stop on, validate reports.
TEST(ValidateBinary, RefusesBadAdminAndTenantSettings) {
  const std::string tokens = temp_path(".tokens");
  std::ofstream(tokens) << "ops short\n";
  struct Case {
    std::string yaml;
    std::string mention;
  };
  const std::vector<Case> cases = {
      {"server:\n  admin_listen: 127.0.0.1:9191\n", "needs server.admin_token_file"},
      {"server:\n  admin_listen: 127.0.0.1:9191\n  admin_token_file: /nonexistent/tokens\n",
       "/nonexistent/tokens"},
      {"server:\n  admin_listen: 127.0.0.1:9191\n  admin_token_file: " + tokens + "\n",
       "at least 16 bytes"},
      {"server:\n  listen: 127.0.0.1:9192\n  admin_listen: 127.0.0.1:9192\n  admin_token_file: " +
           tokens + "\n",
       "decision"},
      {"server:\n  admin_token_file: " + tokens + "\n", "only read with server.admin_listen"},
      {"backend:\n  url: redis://127.0.0.1:6379\n  tenants_file: /tmp/t\n", "memory backend"},
      {"backend:\n  max_batch: 256\n", "backend.max_batch: is for a Redis backend"},
      {"backend:\n  url: memory\n  max_in_flight: 8\n",
       "backend.max_in_flight: is for a Redis backend"},
      {"backend:\n  durability: replicated\n",
       "backend.durability: replicated is for a Redis backend"},
  };
  for (const Case& c : cases) {
    const std::string path = write_config(c.yaml);
    Outcome run = run_binary("validate " + path);
    std::remove(path.c_str());
    EXPECT_EQ(run.status, 1) << c.yaml << run.out;
    EXPECT_NE(run.err.find(c.mention), std::string::npos) << c.yaml << run.err;
  }
  std::ofstream(tokens) << "# operators\nops 0123456789abcdef0123\n";
  const std::string good =
      write_config("server:\n  admin_listen: 127.0.0.1:9191\n  admin_token_file: " + tokens + "\n");
  Outcome run = run_binary("validate " + good);
  std::remove(good.c_str());
  std::remove(tokens.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
}
