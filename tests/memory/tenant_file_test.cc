// The memory backend's tenant journal (src/memory/tenant_file.h): what a write acknowledged is in
// the file before it returns; a reopen finds every record; a torn last line is dropped; the file
// is compacted at open; a file written under another key_hash is refused; bad lines name their
// line.
#include "src/memory/tenant_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>

namespace spillway {
namespace {

class TenantFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/spillway_tenant_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::remove(path_.c_str());
  }
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove((path_ + ".lock").c_str());
  }

  std::unique_ptr<FileTenantDirectory> open(KeyHashOptions hash = {}) {
    auto directory = FileTenantDirectory::open(path_, hash);
    EXPECT_TRUE(directory.has_value()) << (directory ? "" : directory.error().message);
    return directory ? std::move(*directory) : nullptr;
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }
  void append(const std::string& more) const {
    std::ofstream out(path_, std::ios::app);
    out << more;
  }
  std::size_t lines() const {
    const std::string all = text();
    return static_cast<std::size_t>(std::count(all.begin(), all.end(), '\n'));
  }

  std::string path_;
};

TEST_F(TenantFile, EveryAcknowledgedWriteIsInTheFileAndInAReopenedCopy) {
  {
    auto tenants = open();
    ASSERT_NE(tenants, nullptr);
    ASSERT_TRUE(tenants->put("k1", {.plan = "pro"}).has_value());
    ASSERT_TRUE(tenants->put("k2", {.blocked = true}).has_value());
    ASSERT_TRUE(tenants->put("k3", {.limits = {{"gateway", {7, kMicrosPerMinute}}}}).has_value());
    ASSERT_TRUE(tenants->put("k1", {.plan = "enterprise"}).has_value());
    ASSERT_TRUE(tenants->erase("k2").has_value());
    // Written before put() returned: header + 5 changes, no buffering in between.
    EXPECT_EQ(lines(), 6u);
    EXPECT_EQ(text().find("k1"), std::string::npos);  // digests, not keys
  }
  auto again = open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->size(), 2u);
  ASSERT_NE(again->find("k1"), nullptr);
  EXPECT_EQ(again->find("k1")->plan, "enterprise");
  EXPECT_EQ(again->find("k2"), nullptr);
  ASSERT_NE(again->find("k3"), nullptr);
  EXPECT_EQ(again->find("k3")->limits.at("gateway").limit, 7);
  // Compacted at open: the header and one line per record.
  EXPECT_EQ(lines(), 3u);
}

TEST_F(TenantFile, ATornLastLineIsDroppedAndTheRestKept) {
  {
    auto tenants = open();
    ASSERT_TRUE(tenants->put("k1", {.plan = "pro"}).has_value());
  }
  append("P abcdefghijklmnopqrstuv v1 0 fr");  // a write cut short by a crash: no newline
  auto again = open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->torn_lines(), 1u);
  EXPECT_EQ(again->size(), 1u);
  EXPECT_EQ(again->find("k1")->plan, "pro");
  EXPECT_EQ(text().find("abcdefghij"), std::string::npos);
}

TEST_F(TenantFile, AMalformedLineNamesTheFileAndLineAndOpensNothing) {
  {
    auto tenants = open();
    ASSERT_TRUE(tenants->put("k1", {.plan = "pro"}).has_value());
  }
  append("X what\n");
  auto bad = FileTenantDirectory::open(path_, {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find(path_ + " line 3"), std::string::npos) << bad.error().message;
  append("");
  const std::string before = text();
  EXPECT_NE(before.find("X what"), std::string::npos);  // left as it was for the operator
}

TEST_F(TenantFile, AFileOfAnotherKeyHashIsRefused) {
  {
    auto tenants = open();
    ASSERT_TRUE(tenants->put("k1", {.plan = "pro"}).has_value());
  }
  auto hmac = FileTenantDirectory::open(
      path_, {.hash = KeyHash::kHmacSha256, .secret = "0123456789abcdef0123"});
  ASSERT_FALSE(hmac.has_value());
  EXPECT_NE(hmac.error().message.find("another backend.key_hash"), std::string::npos)
      << hmac.error().message;
  auto none = FileTenantDirectory::open(path_, {.hash = KeyHash::kNone});
  EXPECT_FALSE(none.has_value());
  EXPECT_TRUE(FileTenantDirectory::open(path_, {}).has_value());
}

TEST_F(TenantFile, ClearKeysWithSpacesAndControlsRoundTrip) {
  const std::string key =
      "key with spaces\n%and\x01"
      "controls";
  {
    auto tenants = open({.hash = KeyHash::kNone});
    ASSERT_TRUE(tenants->put(key, {.plan = "pro"}).has_value());
  }
  EXPECT_EQ(lines(), 2u);
  auto again = open({.hash = KeyHash::kNone});
  ASSERT_NE(again, nullptr);
  ASSERT_NE(again->find(key), nullptr);
  EXPECT_EQ(again->find(key)->plan, "pro");
}

// A write that fails half-way (the file may not grow: RLIMIT_FSIZE, as a full disk would) is an
// error, is cut back so the journal stays readable, and later writes go on once there is room.
TEST_F(TenantFile, AWriteThatFailsHalfWayLeavesAReadableJournal) {
  auto tenants = open();
  ASSERT_NE(tenants, nullptr);
  ASSERT_TRUE(tenants->put("k1", {.plan = "pro"}).has_value());
  const std::size_t size = text().size();
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = size + 10;  // room for 10 bytes of a ~36-byte line
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tight), 0);
  auto failed = tenants->put("k2", {.plan = "pro"});
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, SIG_DFL);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, Errc::kUnavailable);
  EXPECT_EQ(tenants->find("k2"), nullptr);
  EXPECT_EQ(text().size(), size);  // the partial line was cut away
  ASSERT_TRUE(tenants->put("k3", {.plan = "free"}).has_value());
  tenants.reset();
  auto again = open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->size(), 2u);
  EXPECT_NE(again->find("k3"), nullptr);
  EXPECT_EQ(again->find("k2"), nullptr);
}

TEST_F(TenantFile, ASecondDirectoryOnTheSameFileIsRefused) {
  auto first = open();
  ASSERT_NE(first, nullptr);
  auto second = FileTenantDirectory::open(path_, {});
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message.find("in use by another process"), std::string::npos)
      << second.error().message;
  first.reset();
  EXPECT_TRUE(FileTenantDirectory::open(path_, {}).has_value());
}

TEST_F(TenantFile, AnUnwritableDirectoryIsAnError) {
  auto bad = FileTenantDirectory::open("/nonexistent-dir/tenants", {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("/nonexistent-dir/tenants"), std::string::npos);
}

}  // namespace
}  // namespace spillway
