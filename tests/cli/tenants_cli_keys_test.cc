// `spillway tenants` reaches every key (src/cli/tenants.cc): the key `import` (whose plain path,
// /v1/tenants/import, is the import route), the dot segments "." and "..", and keys holding '/',
// '%', spaces or quotes are each set, read, reset and deleted as themselves. Before, `tenants set
// import` was sent to the import route and refused (405).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/poll.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

TEST(TenantsCliKeys, EveryKeyIsReachableIncludingImportAndDotSegments) {
  const std::string dir = "/tmp/spillway_tenants_cli_keys_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokens") << "ops cli-keys-token-0123456789\n";
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
  for (const std::string key :
       {"import", ".", "..", "a/b c", "100%", "\"csv5\"", "imp", "Import"}) {
    const std::string quoted = "'" + key + "'";
    const testing::BinaryRun set =
        testing::run_binary("tenants set " + quoted + " --plan pro" + admin);
    EXPECT_EQ(set.status, 0) << key << ": " << set.err;
    const testing::BinaryRun get = testing::run_binary("tenants get " + quoted + admin);
    EXPECT_EQ(get.status, 0) << key << ": " << get.err;
    EXPECT_NE(get.out.find("\"plan\":\"pro\""), std::string::npos) << key << ": " << get.out;
    const testing::BinaryRun reset =
        testing::run_binary("tenants reset " + quoted + " --layer gateway" + admin);
    EXPECT_EQ(reset.status, 0) << key << ": " << reset.err;
    const testing::BinaryRun gone = testing::run_binary("tenants delete " + quoted + admin);
    EXPECT_EQ(gone.status, 0) << key << ": " << gone.err;
    EXPECT_EQ(testing::run_binary("tenants get " + quoted + admin).status, 1) << key;
  }
  // The import itself still works.
  std::ofstream(dir + "/t.csv") << "key,plan\nimport,pro\n";
  const testing::BinaryRun imported =
      testing::run_binary("tenants import " + dir + "/t.csv" + admin);
  EXPECT_EQ(imported.status, 0) << imported.err;
  EXPECT_NE(imported.out.find("{\"imported\":1}"), std::string::npos) << imported.out;
  EXPECT_NE(testing::run_binary("tenants get import" + admin).out.find("\"plan\":\"pro\""),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spillway
