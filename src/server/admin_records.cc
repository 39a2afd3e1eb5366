// Tenant records as the admin API reads and writes them (src/server/admin_records.h): from JSON,
// checked against the policy, to JSON. Pure functions; thread-safe.
#include "src/server/admin_records.h"

#include <algorithm>
#include <set>
#include <vector>

#include "src/core/text.h"
#include "src/server/decision_response.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

std::unexpected<Error> bad(std::string message, std::string field = "") {
  return std::unexpected(Error{Errc::kInvalidArgument, std::move(message), std::move(field)});
}

std::string rate_text(const TenantRate& rate) {
  return std::to_string(rate.limit) + "/" + format_duration(rate.period);
}

}  // namespace

void write_record(JsonWriter& json, const TenantRecord& record) {
  json.begin_object();
  if (record.plan.empty()) {
    json.null_member("plan");
  } else {
    json.member("plan", record.plan);
  }
  json.key("limits").begin_object();
  for (const auto& [layer, rate] : record.limits) json.runtime_key(layer).value(rate_text(rate));
  json.end_object().member("blocked", record.blocked).end_object();
}

void write_optional_record(JsonWriter& json, const std::optional<TenantRecord>& record) {
  if (record) {
    write_record(json, *record);
  } else {
    json.null();
  }
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse from_error(const Error& error) {
  if (error.code == Errc::kInvalidArgument) return error_response(400, error.message);
  return error_response(503, "the tenant store did not answer: " + error.message);
}

Result<TenantRecord> record_of(const json::object& object, const std::string& where,
                               std::initializer_list<std::string_view> also_allowed) {
  TenantRecord record;
  for (const auto& [name, value] : object) {
    if (name == "plan") {
      if (value.is_null()) continue;
      if (!value.is_string()) return bad(where + "\"plan\" must be a string", "plan");
      record.plan = std::string(value.as_string());
    } else if (name == "blocked") {
      if (!value.is_bool()) return bad(where + "\"blocked\" must be true or false", "blocked");
      record.blocked = value.as_bool();
    } else if (name == "limits") {
      if (!value.is_object()) {
        return bad(where +
                       "\"limits\" must be an object of layer to rate, e.g. "
                       "{\"gateway\":\"1200/min\"}",
                   "limits");
      }
      for (const auto& [layer, rate_value] : value.as_object()) {
        const std::string field = "limits." + std::string(layer);
        if (!rate_value.is_string()) {
          return bad(where + "\"" + field + "\" must be a rate such as \"1200/min\"", field);
        }
        auto rate = parse_rate(std::string_view(rate_value.as_string()));
        if (!rate) return bad(where + "\"" + field + "\": " + rate.error().message, field);
        record.limits[std::string(layer)] = {rate->limit, rate->period};
      }
    } else if (std::find(also_allowed.begin(), also_allowed.end(), std::string_view(name)) ==
               also_allowed.end()) {
      return bad(where + "unknown field " + quote_for_error(name, 60) +
                     " (a tenant record has plan, limits, blocked)",
                 std::string(name));
    }
  }
  if (auto checked = check_tenant_record(record); !checked) {
    return bad(where + checked.error().message, checked.error().field);
  }
  return record;
}

Result<void> check_against(const policy::Policy& policy, const TenantRecord& record,
                           const std::string& where) {
  std::vector<const policy::LayerSpec*> layers;
  for (const policy::LayerSpec& layer : policy.spec().layers) {
    if (layer.by_plan && layer.by_plan->source == policy::PlanSource::kStore) {
      layers.push_back(&layer);
    }
  }
  if (layers.empty()) {
    return bad(where +
                   "the policy has no by_plan layer with source: store, so a tenant record "
                   "would change nothing; add source: store to a by_plan layer",
               "plan");
  }
  if (!record.plan.empty()) {
    std::set<std::string> plans;
    for (const policy::LayerSpec* layer : layers) {
      for (const auto& [name, rate] : layer->by_plan->plans) plans.insert(name);
    }
    if (!plans.contains(record.plan)) {
      std::string known;
      for (const std::string& name : plans) known += (known.empty() ? "" : ", ") + name;
      return bad(
          where + "plan " + quote_for_error(record.plan, 64) + " is not a plan (" + known + ")",
          "plan");
    }
  }
  for (const auto& [name, rate] : record.limits) {
    const std::string field = "limits." + name;
    auto layer = std::find_if(layers.begin(), layers.end(),
                              [&](const policy::LayerSpec* l) { return l->name == name; });
    if (layer == layers.end()) {
      std::string known;
      for (const policy::LayerSpec* l : layers) known += (known.empty() ? "" : ", ") + l->name;
      return bad(where + "\"" + field + "\": no by_plan layer with source: store is named " +
                     quote_for_error(name, 64) + " (" + known + ")",
                 field);
    }
    // As the layer will build it (src/policy/layer_inputs.h): its algorithm and its delay.
    Result<Limit> limit = Limit::make((*layer)->algorithm, rate.limit, rate.period, std::nullopt,
                                      (*layer)->max_delay);
    if (!limit) return bad(where + "\"" + field + "\": " + limit.error().message, field);
  }
  return {};
}

}  // namespace spillway::server
