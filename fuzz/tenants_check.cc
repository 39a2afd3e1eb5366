#include "fuzz/tenants_check.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "fuzz/check_util.h"
#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/memory/tenant_file.h"
#include "src/server/admin_service.h"

namespace spillway::fuzz {
namespace {

constexpr char kToken[] = "fuzz-token-0123456789";

std::shared_ptr<const policy::Policy> tenant_policy() {
  static const std::shared_ptr<const policy::Policy> policy = [] {
    policy::PolicySpec spec = policy::seed_policy_spec();
    spec.layers[1].by_plan->source = policy::PlanSource::kStore;
    return *policy::Policy::make(spec);
  }();
  return policy;
}

void check_record_text(std::string_view text) {
  auto record = decode_tenant_record(text);
  if (!record) {
    if (record.error().code != Errc::kInvalidArgument) violated("decode error is not invalid");
    return;
  }
  if (!check_tenant_record(*record)) violated("a decoded record fails the check", text);
  auto again = decode_tenant_record(encode_tenant_record(*record));
  if (!again || !(*again == *record)) violated("a record does not round-trip", text);
}

// Every record in the directory, in id order.
std::vector<TenantEntry> everything(const TenantDirectory& tenants) {
  return tenants.list("", "", 1000).entries;
}

bool same(const std::vector<TenantEntry>& a, const std::vector<TenantEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || !(a[i].record == b[i].record)) return false;
  }
  return true;
}

void check_admin(std::string body, std::string method, std::string target,
                 std::string content_type) {
  auto opened = FileTenantDirectory::open("", {.hash = KeyHash::kNone});
  if (!opened) violated("an in-process directory does not open");
  std::shared_ptr<TenantDirectory> tenants = std::move(*opened);
  (void)tenants->put("existing", {.plan = "pro"});
  static MemoryStore store;
  server::AdminService admin(
      tenants, store, {{"fuzz", kToken}}, [] { return tenant_policy(); },
      [](const std::string&) {});
  const std::vector<TenantEntry> before = everything(*tenants);
  server::HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  // Assigned one by one: GCC 12 sees a false overread in a pair built from a literal here.
  std::string bearer = "Bearer ";
  bearer += kToken;
  request.headers.resize(2);
  request.headers[0].first = "authorization";
  request.headers[0].second = std::move(bearer);
  request.headers[1].first = "content-type";
  request.headers[1].second = std::move(content_type);
  request.body = std::move(body);
  request.peer_address = "127.0.0.1";
  std::optional<server::HttpResponse> answer;
  admin.handle(std::move(request), [&](server::HttpResponse response) { answer = response; });
  if (!answer) violated("the admin API did not answer at once");
  boost::system::error_code ec;
  const boost::json::value json = boost::json::parse(answer->body, ec);
  if (ec || !json.is_object())
    violated("the admin API's answer is not a JSON object", answer->body);
  if (answer->status == 400) {
    const auto* error = json.as_object().if_contains("error");
    if (error == nullptr || !error->is_string()) violated("a 400 without an error", answer->body);
    if (answer->body.find('\n') != std::string::npos) violated("a 400 of several lines");
    if (!same(before, everything(*tenants))) violated("a 400 changed the records");
    return;
  }
  if (answer->status != 200) violated("the admin API answered neither 200 nor 400", answer->body);
  for (const TenantEntry& entry : everything(*tenants)) {
    if (!check_tenant_record(entry.record)) violated("a stored record fails the check", entry.id);
  }
}

void check_journal(std::string_view text) {
  static const std::string path =
      "/tmp/spillway_tenants_fuzz_" + std::to_string(::getpid()) + ".journal";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  std::vector<TenantEntry> first;
  {
    auto opened = FileTenantDirectory::open(path, {.hash = KeyHash::kNone});
    if (!opened) {
      if (opened.error().code != Errc::kInvalidArgument) violated("a journal error not invalid");
      std::remove(path.c_str());
      std::remove((path + ".lock").c_str());
      return;
    }
    first = everything(**opened);
  }
  auto again = FileTenantDirectory::open(path, {.hash = KeyHash::kNone});
  if (!again) violated("a compacted journal does not open again", again.error().message);
  if (!same(first, everything(**again))) violated("a journal reopens with other records");
  again->reset();
  std::remove(path.c_str());
  std::remove((path + ".lock").c_str());
}

}  // namespace

void check_tenants_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      return check_record_text(rest);
    case 1:
      return check_admin(rest, "PUT", "/v1/tenants/k", "application/json");
    case 2:
      return check_admin(rest, "POST", "/v1/tenants/import", "application/x-ndjson");
    case 3:
      return check_admin(rest, "POST", "/v1/tenants/import", "text/csv");
    default:
      // A journal starts with the header its key_hash writes.
      return check_journal("# spillway tenants v1 none spillway-tenants-check\n" + rest);
  }
}

}  // namespace spillway::fuzz
