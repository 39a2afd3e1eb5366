// The admin API's tenant records (src/server/admin_service.h): PUT, GET and DELETE
// /v1/tenants/{key} (the key already spelt as requests key it) and GET /v1/tenants (a page of
// records by id, ≤ kMaxPage). A change is written through the tenant directory (durable first)
// and audited in one line, the key masked.
// Thread safety: from any thread; writes are serialised by the directory.
#include <charconv>
#include <optional>
#include <string>
#include <utility>

#include "src/core/json_writer.h"
#include "src/core/text.h"
#include "src/server/admin_records.h"
#include "src/server/admin_service.h"
#include "src/server/decision_response.h"
#include "src/server/json_unique.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

constexpr std::size_t kMaxPage = 1000;

// The value of `name` in a query string ("plan=pro&cursor=x"), percent-decoded; nullopt when
// absent or malformed.
std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) == name) {
      return equals == std::string_view::npos ? std::string()
                                              : percent_decoded(pair.substr(equals + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace

HttpResponse AdminService::put(const std::string& who, const std::string& key,
                               const std::string& body) {
  auto parsed = parse_json_unique(body);
  if (!parsed && !parsed.error().duplicate.empty()) {
    return error_response(400, "body: " + parsed.error().message());
  }
  if (!parsed) return error_response(400, "body is not valid JSON: " + parsed.error().message());
  const json::value& value = *parsed;
  if (!value.is_object()) {
    return error_response(400, "body must be a JSON object such as {\"plan\":\"pro\"}");
  }
  auto record = record_of(value.as_object(), "");
  if (!record) return from_error(record.error());
  if (auto fits = check_against(*policy_(), *record, ""); !fits) return from_error(fits.error());
  auto before = tenants_->put(key, *record);
  if (!before) return from_error(before.error());
  audit_("token=" + who + " put tenant=" + masked(key) +
         " before=" + (*before ? describe_tenant_record(**before) : std::string("none")) +
         " after=" + describe_tenant_record(*record));
  std::string out;
  JsonWriter json(out);
  json.begin_object().member("id", utf8_or_escaped(tenants_->id_of(key))).key("before");
  write_optional_record(json, *before);
  json.key("after");
  write_record(json, *record);
  json.end_object();
  return json_response(200, std::move(out));
}

HttpResponse AdminService::get(const std::string& key) const {
  auto record = tenants_->find(key);
  if (record == nullptr) {
    return error_response(404,
                          "no tenant record for this key (the file's plan or the default "
                          "applies)");
  }
  std::string out;
  JsonWriter json(out);
  json.begin_object().member("id", utf8_or_escaped(tenants_->id_of(key))).key("record");
  write_record(json, *record);
  json.end_object();
  return json_response(200, std::move(out));
}

HttpResponse AdminService::erase(const std::string& who, const std::string& key) {
  auto before = tenants_->erase(key);
  if (!before) return from_error(before.error());
  if (!*before) return error_response(404, "no tenant record for this key: nothing deleted");
  audit_("token=" + who + " delete tenant=" + masked(key) +
         " before=" + describe_tenant_record(**before) + " after=none");
  std::string out;
  JsonWriter json(out);
  json.begin_object().member("deleted", true).key("before");
  write_record(json, **before);
  json.end_object();
  return json_response(200, std::move(out));
}

HttpResponse AdminService::list(std::string_view query) const {
  std::string plan, cursor;
  for (auto [name, value] : {std::pair{"plan", &plan}, std::pair{"cursor", &cursor}}) {
    if (query.find(std::string(name) + "=") == std::string_view::npos) continue;
    auto decoded = query_value(query, name);
    if (!decoded) {
      return error_response(400, "\"" + std::string(name) + "\" has a malformed %-escape");
    }
    *value = std::move(*decoded);
  }
  std::size_t limit = 100;
  if (auto text = query_value(query, "limit")) {
    std::size_t parsed = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
    if (ec != std::errc() || end != text->data() + text->size() || parsed == 0 ||
        parsed > kMaxPage) {
      return error_response(
          400, "\"limit\" must be a whole number from 1 to " + std::to_string(kMaxPage));
    }
    limit = parsed;
  }
  const TenantPage page = tenants_->list(plan, cursor, limit);
  std::string out;
  JsonWriter json(out);
  json.begin_object().key("tenants").begin_array();
  for (const auto& entry : page.entries) {
    json.begin_object().member("id", utf8_or_escaped(entry.id)).key("record");
    write_record(json, entry.record);
    json.end_object();
  }
  json.end_array();
  if (page.next_cursor.empty()) {
    json.null_member("next_cursor");
  } else {
    json.member("next_cursor", utf8_or_escaped(page.next_cursor));
  }
  json.member("total", tenants_->size()).end_object();
  return json_response(200, std::move(out));
}

}  // namespace spillway::server
