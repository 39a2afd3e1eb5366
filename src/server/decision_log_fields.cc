// decision_log_fields, backend_error_log_fields (see decision_log_fields.h).
#include "src/server/decision_log_fields.h"

#include "src/server/json_text.h"

namespace spillway::server {

std::string decision_log_fields(const policy::PolicyDecision& decision) {
  std::string out = decision.allowed ? "\"allowed\":true" : "\"allowed\":false";
  const policy::LayerDecision* shown = nullptr;
  for (const policy::LayerDecision& layer : decision.layers) {
    if (layer.shadow) continue;
    if (decision.denied_by) {
      if (layer.name == *decision.denied_by) shown = &layer;
    } else if (shown == nullptr || layer.decision.remaining < shown->decision.remaining) {
      shown = &layer;
    }
  }
  if (decision.denied_by) {
    out.append(",\"denied_by\":");
    append_json_string(out, *decision.denied_by);
  }
  if (shown != nullptr) {
    out.append(",\"layer\":");
    append_json_string(out, shown->name);
    if (!shown->plan.empty()) {
      out.append(",\"plan\":");
      append_json_string(out, shown->plan);
    }
  }
  if (!decision.shadow_denied.empty()) {
    out.append(",\"shadow_denied\":[");
    for (std::size_t i = 0; i < decision.shadow_denied.size(); ++i) {
      if (i > 0) out.push_back(',');
      append_json_string(out, decision.shadow_denied[i]);
    }
    out.push_back(']');
  }
  if (decision.shadow_error) {
    out.append(",\"shadow_backend_error\":");
    append_json_string(out, errc_name(decision.shadow_error->code));
  }
  return out;
}

std::string backend_error_log_fields(const Error& error, bool allowed) {
  std::string out = allowed ? "\"allowed\":true" : "\"allowed\":false";
  out.append(",\"backend_error\":");
  append_json_string(out, errc_name(error.code));
  out.append(allowed ? ",\"on_error\":\"allow\"" : ",\"on_error\":\"deny\"");
  return out;
}

}  // namespace spillway::server
