// The admin API's import (src/server/admin_service.h): POST /v1/tenants/import, NDJSON (one
// {"key":…,"plan":…} per line) or CSV (text/csv: key,plan, RFC 4180 quoting, an optional
// key,plan header). Every line is parsed, its key spelt as requests key it and its record checked
// against the policy before anything is written; then all are written in one put_many and
// audited in one line with their count. A bad line is a 400 naming it, and writes nothing.
// Thread safety: from any thread; writes are serialised by the directory.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/json_writer.h"
#include "src/core/text.h"
#include "src/server/admin_records.h"
#include "src/server/admin_service.h"
#include "src/server/csv_fields.h"
#include "src/server/decision_response.h"
#include "src/server/json_unique.h"

namespace spillway::server {
namespace json = boost::json;

HttpResponse AdminService::import(const std::string& who, const HttpRequest& request) {
  const std::string* type = request.header("content-type");
  const bool csv = type != nullptr && ascii_istarts_with(*type, "text/csv");
  const std::shared_ptr<const policy::Policy> policy = policy_();
  std::vector<std::pair<std::string, TenantRecord>> records;
  std::string_view body = request.body;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 BOM (spreadsheets)
  std::size_t number = 0;
  while (!body.empty()) {
    const std::size_t end = body.find('\n');
    std::string_view line = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    std::string key;
    TenantRecord record;
    if (csv) {
      // RFC 4180: "k,1",pro is the key k,1; "say ""hi""" is say "hi".
      auto fields = csv_fields(line);
      if (!fields) return error_response(400, where + fields.error().message);
      if (fields->size() != 2) {
        return error_response(400, where + "a CSV line is key,plan (this one has " +
                                       std::to_string(fields->size()) + " field" +
                                       (fields->size() == 1 ? "" : "s") + ")");
      }
      if (number == 1 && (*fields)[0] == "key" && (*fields)[1] == "plan") continue;  // a header
      key = std::move((*fields)[0]);
      record.plan = std::move((*fields)[1]);
      if (trim(key) != key || trim(record.plan) != record.plan) {
        return error_response(400, where +
                                       "spaces around the key or the plan (CSV is key,plan "
                                       "with nothing around either)");
      }
      if (auto checked = check_tenant_record(record); !checked) {
        return error_response(400, where + checked.error().message);
      }
    } else {
      auto line_value = parse_json_unique(line);
      if (!line_value && !line_value.error().duplicate.empty()) {
        return error_response(400, where + line_value.error().message());
      }
      if (!line_value || !line_value->is_object()) {
        return error_response(400, where +
                                       "not a JSON object (NDJSON: one record per line, "
                                       "{\"key\":\"…\",\"plan\":\"pro\"})");
      }
      const json::object& object = line_value->as_object();
      const json::value* key_value = object.if_contains("key");
      if (key_value == nullptr || !key_value->is_string()) {
        return error_response(400, where + "\"key\" must be a string");
      }
      key = std::string(key_value->as_string());
      auto parsed = record_of(object, where, {"key"});
      if (!parsed) return from_error(parsed.error());
      record = std::move(*parsed);
    }
    if (key.empty() || key.size() > kMaxTenantKeyBytes) {
      return error_response(
          400, where + "the key must be 1 to " + std::to_string(kMaxTenantKeyBytes) + " bytes");
    }
    auto spelt = policy->tenant_key(key, ipv6_prefix_());
    if (!spelt) return error_response(400, where + spelt.error().message);
    key = std::move(*spelt);
    if (auto fits = check_against(*policy, record, where); !fits) return from_error(fits.error());
    records.emplace_back(std::move(key), std::move(record));
  }
  auto written = tenants_->put_many(records);
  if (!written) return from_error(written.error());
  audit_("token=" + who + " import records=" + std::to_string(*written));
  std::string out;
  JsonWriter(out).begin_object().member("imported", *written).end_object();
  return json_response(200, std::move(out));
}

}  // namespace spillway::server
