// --json on bench, inspect, validate and tenants list (the real binary): stdout is one JSON
// document with the same facts as the text; errors still go to stderr with the same exit status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/poll.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

namespace cli_json = boost::json;

// `text` parsed as exactly one JSON document (a trailing newline allowed); null when it is not.
cli_json::value cli_json_document(const std::string& text) {
  boost::system::error_code ec;
  cli_json::value value = cli_json::parse(text, ec);
  if (ec) return nullptr;
  return value;
}

std::string cli_json_dir(const std::string& name) {
  const std::string dir = "/tmp/spillway_cli_json_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(CliJson, ValidateGoodAndBadConfigs) {
  const std::string dir = cli_json_dir("validate");
  std::ofstream(dir + "/good.yaml") << "layers:\n  - {name: edge, key: [ip], limit: 100/s}\n"
                                       "  - {name: user, key: [user], limit: 10/s}\n";
  const testing::BinaryRun good = testing::run_binary("validate --json " + dir + "/good.yaml");
  EXPECT_EQ(good.status, 0) << good.err;
  const cli_json::value ok = cli_json_document(good.out);
  ASSERT_TRUE(ok.is_object()) << good.out;
  EXPECT_EQ(ok.at("ok"), true);
  EXPECT_EQ(ok.at("layers"), 2);
  EXPECT_EQ(ok.at("file"), (dir + "/good.yaml").c_str());
  ASSERT_EQ(ok.at("warnings").as_array().size(), 1u) << good.out;  // "user": not from /v1/auth
  EXPECT_NE(good.err.find("warning"), std::string::npos);          // and still on stderr

  std::ofstream(dir + "/bad.yaml") << "layers:\n  - {name: edge, key: [ip], limit: 60/mn}\n";
  const testing::BinaryRun bad = testing::run_binary("validate --json " + dir + "/bad.yaml");
  EXPECT_EQ(bad.status, 1);
  const cli_json::value refused = cli_json_document(bad.out);
  ASSERT_TRUE(refused.is_object()) << bad.out;
  EXPECT_EQ(refused.at("ok"), false);
  ASSERT_EQ(refused.at("errors").as_array().size(), 1u) << bad.out;
  EXPECT_NE(std::string(refused.at("errors").as_array()[0].as_string()).find("60/mn"),
            std::string::npos);
  EXPECT_NE(bad.err.find("60/mn"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

TEST(CliJson, BenchReportIsOneObject) {
  const testing::BinaryRun run = testing::run_binary(
      "bench --json --algorithm sliding_log --limit 50 --period 1h --keys 1 --requests 200");
  ASSERT_EQ(run.status, 0) << run.err;
  const cli_json::value report = cli_json_document(run.out);
  ASSERT_TRUE(report.is_object()) << run.out;
  EXPECT_EQ(report.at("backend"), "memory");
  EXPECT_EQ(report.at("admitted"), 50);
  EXPECT_EQ(report.at("denied"), 150);
  EXPECT_EQ(report.at("errors"), 0);
  EXPECT_TRUE(report.at("p99_us").is_number());
  EXPECT_EQ(run.out.find("admitted="), std::string::npos) << run.out;
}

TEST(CliJson, InspectShowsEachLayer) {
  const testing::BinaryRun run =
      testing::run_binary("inspect --json api_key=k1 ip=203.0.113.7 endpoint=/search");
  ASSERT_EQ(run.status, 0) << run.err;
  const cli_json::value shown = cli_json_document(run.out);
  ASSERT_TRUE(shown.is_object()) << run.out;
  EXPECT_EQ(shown.at("backend"), "memory");
  const cli_json::array& layers = shown.at("layers").as_array();
  ASSERT_EQ(layers.size(), 3u) << run.out;
  EXPECT_EQ(layers[1].at("name"), "gateway");
  EXPECT_EQ(layers[1].at("plan"), "free");
  EXPECT_EQ(layers[1].at("limit"), "gcra 60/1m burst 60");
  EXPECT_TRUE(layers[0].at("now").is_null());  // memory: the state is the serving process's
}

TEST(CliJson, TenantsListAllIsOneDocument) {
  const std::string dir = cli_json_dir("tenants");
  std::ofstream(dir + "/tokens") << "ops cli-json-token-0123456789\n";
  std::filesystem::permissions(
      dir + "/tokens", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::ofstream(dir + "/spillway.yaml") << "server:\n  admin_listen: 127.0.0.1:0\n"
                                           "  admin_token_file: "
                                        << dir
                                        << "/tokens\n  access_log: off\n"
                                           "layers:\n"
                                           "  - name: gateway\n"
                                           "    key: [api_key]\n"
                                           "    by_plan:\n"
                                           "      source: store\n"
                                           "      plans: {free: 3/min, pro: 100/min}\n"
                                           "      default: free\n";
  testing::ServeProcess serve({"--config", dir + "/spillway.yaml"}, dir + "/serve.log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t admin_port = serve.admin_port();
  ASSERT_NE(admin_port, 0) << serve.log();
  const std::string admin = " --admin http://127.0.0.1:" + std::to_string(admin_port) +
                            " --token-file " + dir + "/tokens";
  for (const char* key : {"t1", "t2", "t3", "t4", "t5"}) {
    ASSERT_EQ(testing::run_binary(std::string("tenants set ") + key + " --plan pro" + admin).status,
              0);
  }
  // Pages of two: three answers, one document.
  const testing::BinaryRun run = testing::run_binary("tenants list --all --json --page 2" + admin);
  ASSERT_EQ(run.status, 0) << run.err;
  const cli_json::value listed = cli_json_document(run.out);
  ASSERT_TRUE(listed.is_object()) << run.out;
  EXPECT_EQ(listed.at("tenants").as_array().size(), 5u) << run.out;
  EXPECT_TRUE(listed.at("next_cursor").is_null());
  EXPECT_EQ(listed.at("total"), 5);
  // A refused token: the error on stderr, exit 1, nothing on stdout.
  std::ofstream(dir + "/wrong") << "ops wrong-token-0123456789\n";
  std::filesystem::permissions(
      dir + "/wrong", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const testing::BinaryRun refused = testing::run_binary(
      "tenants list --all --json --admin http://127.0.0.1:" + std::to_string(admin_port) +
      " --token-file " + dir + "/wrong");
  EXPECT_EQ(refused.status, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("spillway tenants: 401"), std::string::npos) << refused.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spillway
