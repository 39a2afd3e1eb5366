// Tenant records (spillway/tenant_directory.h): the stored form round-trips and refuses anything
// else; records are checked; the in-process copy finds, lists in pages and counts them; keys are
// stored under their digest.
#include "spillway/tenant_directory.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "src/memory/tenant_file.h"

namespace spillway {
namespace {

TenantRecord plan(const std::string& name) { return TenantRecord{.plan = name}; }

std::unique_ptr<FileTenantDirectory> in_process(KeyHash hash = KeyHash::kSha256) {
  auto directory = FileTenantDirectory::open("", {.hash = hash});
  EXPECT_TRUE(directory.has_value());
  return std::move(*directory);
}

TEST(TenantRecords, EncodeAndDecodeRoundTrip) {
  TenantRecord record{.plan = "pro",
                      .limits = {{"gateway", {1200, kMicrosPerMinute}}, {"edge", {5, 1000}}},
                      .blocked = true};
  const std::string text = encode_tenant_record(record);
  EXPECT_EQ(text, "v1 1 pro edge=5/1000 gateway=1200/60000000");
  auto back = decode_tenant_record(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, record);
  EXPECT_EQ(encode_tenant_record(TenantRecord{.blocked = true}), "v1 1 .");
}

RC_GTEST_PROP(TenantRecords, EveryValidRecordRoundTrips, ()) {
  const auto name = rc::gen::container<std::string>(*rc::gen::inRange(1, 10),
                                                    rc::gen::element('a', 'Z', '0', '_', '-', 'q'));
  TenantRecord record;
  record.blocked = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>()) record.plan = *name;
  const int layers = *rc::gen::inRange(0, 4);
  for (int i = 0; i < layers; ++i) {
    record.limits[*name + std::to_string(i)] = {
        *rc::gen::inRange<std::int64_t>(1, 1'000'000'000),
        *rc::gen::inRange<Micros>(kMicrosPerMilli, 366 * kMicrosPerDay)};
  }
  RC_PRE(check_tenant_record(record).has_value());
  auto back = decode_tenant_record(encode_tenant_record(record));
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == record);
}

TEST(TenantRecords, DecodeRefusesMalformedText) {
  for (const char* text :
       {"", "v1", "v2 0 pro", "v1 2 pro", "v1 0", "v1 0 pro gateway", "v1 0 pro gateway=1",
        "v1 0 pro gateway=x/1000", "v1 0 pro gateway=0/1000", "v1 0 pro gateway=1/10",
        "v1 0 pro g=1/1000 g=2/1000", "v1 0 .", "v1 0 pr:o", "v1  0 pro"}) {
    EXPECT_FALSE(decode_tenant_record(text).has_value()) << text;
  }
}

TEST(TenantRecords, CheckNamesTheField) {
  auto empty = check_tenant_record({});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("delete"), std::string::npos);
  auto bad_plan = check_tenant_record(plan("pro plan"));
  ASSERT_FALSE(bad_plan.has_value());
  EXPECT_EQ(bad_plan.error().field, "plan");
  auto bad_rate = check_tenant_record({.limits = {{"gateway", {0, kMicrosPerMinute}}}});
  ASSERT_FALSE(bad_rate.has_value());
  EXPECT_EQ(bad_rate.error().field, "limits.gateway");
  EXPECT_TRUE(check_tenant_record({.limits = {{"gateway", {1, kMicrosPerMilli}}}}).has_value());
}

TEST(TenantDirectory, PutFindEraseAndTheRecordBefore) {
  auto tenants = in_process();
  EXPECT_EQ(tenants->find("k1"), nullptr);
  auto first = tenants->put("k1", plan("pro"));
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->has_value());
  auto second = tenants->put("k1", plan("free"));
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((*second)->plan, "pro");
  ASSERT_NE(tenants->find("k1"), nullptr);
  EXPECT_EQ(tenants->find("k1")->plan, "free");
  EXPECT_EQ(tenants->find("k2"), nullptr);
  EXPECT_EQ(tenants->size(), 1u);
  auto erased = tenants->erase("k1");
  ASSERT_TRUE(erased.has_value());
  ASSERT_TRUE(erased->has_value());
  EXPECT_EQ(tenants->find("k1"), nullptr);
  auto again = tenants->erase("k1");
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(tenants->size(), 0u);
}

TEST(TenantDirectory, BadKeysAndRecordsChangeNothing) {
  auto tenants = in_process();
  ASSERT_TRUE(tenants->put("kept", plan("pro")).has_value());
  auto empty = tenants->put("", plan("pro"));
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().field, "key");
  auto long_key = tenants->put(std::string(kMaxTenantKeyBytes + 1, 'k'), plan("pro"));
  ASSERT_FALSE(long_key.has_value());
  EXPECT_NE(long_key.error().message.find("257"), std::string::npos);
  EXPECT_TRUE(tenants->put(std::string(kMaxTenantKeyBytes, 'k'), plan("pro")).has_value());
  EXPECT_FALSE(tenants->put("kept", {}).has_value());
  EXPECT_EQ(tenants->find("kept")->plan, "pro");
  // A bulk write with one bad record writes none of them.
  std::vector<std::pair<std::string, TenantRecord>> batch = {
      {"a", plan("pro")}, {"b", plan("bad plan")}, {"c", plan("free")}};
  auto many = tenants->put_many(batch);
  ASSERT_FALSE(many.has_value());
  EXPECT_NE(many.error().message.find("record 2"), std::string::npos);
  EXPECT_EQ(tenants->find("a"), nullptr);
  EXPECT_EQ(tenants->size(), 2u);
}

TEST(TenantDirectory, RecordsAreStoredUnderTheKeysDigest) {
  auto hashed = in_process();
  ASSERT_TRUE(hashed->put("sk-live-secret", plan("pro")).has_value());
  const TenantPage page = hashed->list("", "", 10);
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(page.entries[0].id.size(), KeyDigest::kChars);
  EXPECT_EQ(page.entries[0].id.find("secret"), std::string::npos);
  EXPECT_EQ(page.entries[0].id, hashed->id_of("sk-live-secret"));
  EXPECT_NE(hashed->find_id(page.entries[0].id), nullptr);
  auto clear = in_process(KeyHash::kNone);
  ASSERT_TRUE(clear->put("sk-live-secret", plan("pro")).has_value());
  EXPECT_EQ(clear->list("", "", 10).entries[0].id, "sk-live-secret");
}

TEST(TenantDirectory, ListPagesInIdOrderWithAPlanFilter) {
  auto tenants = in_process(KeyHash::kNone);
  std::vector<std::pair<std::string, TenantRecord>> records;
  for (int i = 0; i < 250; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "key-%03d", i);
    records.emplace_back(key, plan(i % 3 == 0 ? "pro" : "free"));
  }
  ASSERT_EQ(tenants->put_many(records).value_or(0), 250u);
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    const TenantPage page = tenants->list("", cursor, 40);
    for (const TenantEntry& entry : page.entries) seen.push_back(entry.id);
    cursor = page.next_cursor;
    ++pages;
  } while (!cursor.empty());
  EXPECT_EQ(pages, 7);
  ASSERT_EQ(seen.size(), 250u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 250u);
  std::size_t pro = 0;
  cursor.clear();
  do {
    const TenantPage page = tenants->list("pro", cursor, 30);
    for (const TenantEntry& entry : page.entries) {
      EXPECT_EQ(entry.record.plan, "pro");
      ++pro;
    }
    cursor = page.next_cursor;
  } while (!cursor.empty());
  EXPECT_EQ(pro, 84u);
  EXPECT_TRUE(tenants->list("", "", 0).entries.empty());
  // Pages of one, two and three: 250 records in 64 shards put several in some shard, and a page
  // must still say that more follow.
  for (std::size_t size : {1u, 2u, 3u}) {
    std::size_t count = 0;
    cursor.clear();
    do {
      const TenantPage page = tenants->list("", cursor, size);
      count += page.entries.size();
      cursor = page.next_cursor;
    } while (!cursor.empty());
    EXPECT_EQ(count, 250u) << "pages of " << size;
  }
}

TEST(TenantDirectory, DescribeSaysWhatARecordDoes) {
  EXPECT_EQ(describe_tenant_record(plan("pro")), "plan pro");
  EXPECT_EQ(
      describe_tenant_record(
          {.plan = "pro", .limits = {{"gateway", {1200, kMicrosPerMinute}}}, .blocked = true}),
      "blocked, plan pro, gateway 1200/1m");
}

}  // namespace
}  // namespace spillway
