// The admin API's counter reset (src/server/admin_service.h): DELETE
// /v1/tenants/{key}/counters/{layer}. Every (key, limit) the layer may keep for the caller
// (Policy::keys_of_caller) is reset through the serving store (Operation::kReset), then the reset
// is announced to the other instances on the backend (TenantDirectory::announce_reset), and
// audited in one line.
// Thread safety: from any thread; it waits for the store on the admin listener's own thread.
#include <string>
#include <string_view>
#include <vector>

#include "src/core/json_writer.h"
#include "src/core/text.h"
#include "src/server/admin_records.h"
#include "src/server/admin_service.h"
#include "src/server/decision_response.h"

namespace spillway::server {

HttpResponse AdminService::reset(const std::string& who, const std::string& key,
                                 std::string_view layer) {
  auto checks = policy_()->keys_of_caller(layer, key, ipv6_prefix_());
  if (!checks) return from_error(checks.error());
  std::vector<KeyedLimit> keys;
  for (const policy::Policy::Check& check : *checks) keys.push_back({check.key, check.limit});
  auto request = StoreRequest::make(keys, 0, std::nullopt, Operation::kReset);
  if (!request) return from_error(request.error());
  // The admin listener's own thread waits: the backend answers on its I/O threads.
  Result<Decisions> done = store_.decide_and_wait(*request);
  if (!done) return error_response(503, "the backend did not reset: " + done.error().message);
  std::size_t forgotten = 0;
  for (const Decision& d : *done) forgotten += d.allowed ? 1 : 0;
  // Every other instance on this backend forgets the denials it remembers (within the time a
  // record change takes to reach it); this one already has.
  const Result<void> announced = tenants_->announce_reset();
  const std::string name(layer);
  audit_("token=" + who + " reset tenant=" + masked(key) + " layer=" + name +
         " keys=" + std::to_string(keys.size()) + " held_state=" + std::to_string(forgotten) +
         (announced ? "" : " not_announced=" + quote_for_error(announced.error().message, 120)));
  std::string out;
  JsonWriter json(out);
  json.begin_object()
      .member("layer", name)
      .member("keys", keys.size())
      .member("held_state", forgotten)
      .member("announced", announced.has_value());
  // The reset is done here and in the shared store; when it was not announced, instances that
  // remember a denial of this caller keep it until its retry_after runs out.
  if (!announced) json.member("announce_error", announced.error().message);
  json.end_object();
  return json_response(200, std::move(out));
}

}  // namespace spillway::server
