// Tenant records as the admin API (src/server/admin_service.h) reads and writes them, shared by
// its handlers: a record from a JSON object (record_of), checked against the policy in force
// (check_against), written as JSON (write_record), and the API's JSON answers (json_response,
// from_error). Private to src/server. Pure functions; thread-safe.
#pragma once

#include <boost/json.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/error.h"
#include "spillway/policy_engine.h"
#include "spillway/tenant_directory.h"
#include "src/core/json_writer.h"
#include "src/server/http_server.h"

namespace spillway::server {

// A JSON answer: `status` with `body` (already JSON).
HttpResponse json_response(int status, std::string body);

// An error of the tenant directory or of a check: kInvalidArgument is a 400 with its message,
// anything else a 503 (the tenant store did not answer).
HttpResponse from_error(const Error& error);

// {"plan":…|null,"limits":{layer:"<limit>/<period>"…},"blocked":…}, the next value of `json`.
void write_record(JsonWriter& json, const TenantRecord& record);
// The record, or null.
void write_optional_record(JsonWriter& json, const std::optional<TenantRecord>& record);

// A record as JSON sends it: plan, limits, blocked; any other field is refused by name, except
// those of `also_allowed`. `where` prefixes messages ("line 3: "). Errors are kInvalidArgument,
// naming the field.
Result<TenantRecord> record_of(const boost::json::object& object, const std::string& where,
                               std::initializer_list<std::string_view> also_allowed = {});

// Whether the policy can use the record: a plan of a store-sourced by_plan layer, limits for such
// layers that their algorithm accepts. Errors are kInvalidArgument, prefixed by `where`.
Result<void> check_against(const policy::Policy& policy, const TenantRecord& record,
                           const std::string& where);

}  // namespace spillway::server
