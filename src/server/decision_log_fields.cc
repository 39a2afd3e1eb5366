// decision_log_fields, backend_error_log_fields (see decision_log_fields.h).
#include "src/server/decision_log_fields.h"

#include "src/core/json_writer.h"

namespace spillway::server {

std::string decision_log_fields(const policy::PolicyDecision& decision) {
  const policy::LayerDecision* shown = nullptr;
  for (const policy::LayerDecision& layer : decision.layers) {
    if (layer.shadow) continue;
    if (decision.denied_by) {
      if (layer.name == *decision.denied_by) shown = &layer;
    } else if (shown == nullptr || layer.decision.remaining < shown->decision.remaining) {
      shown = &layer;
    }
  }
  std::string out;
  JsonWriter json = JsonWriter::in_object(out, false);
  json.member("allowed", decision.allowed);
  if (decision.denied_by) json.member("denied_by", *decision.denied_by);
  if (decision.shed) json.member("shed", true);
  if (!decision.priority.empty()) json.member("priority", decision.priority);
  if (shown != nullptr) {
    json.member("layer", shown->name);
    if (!shown->plan.empty()) json.member("plan", shown->plan);
  }
  if (!decision.shadow_denied.empty()) {
    json.key("shadow_denied").begin_array();
    for (const std::string& name : decision.shadow_denied) json.value(name);
    json.end_array();
  }
  if (decision.shadow_error) {
    json.member("shadow_backend_error", errc_name(decision.shadow_error->code));
  }
  return out;
}

std::string backend_error_log_fields(const Error& error, bool allowed) {
  std::string out;
  JsonWriter::in_object(out, false)
      .member("allowed", allowed)
      .member("backend_error", errc_name(error.code))
      .member("on_error", allowed ? "allow" : "deny");
  return out;
}

}  // namespace spillway::server
