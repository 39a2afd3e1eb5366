#include "src/rls/tenant_gate.h"

namespace spillway::rls {

bool TenantGate::blocked(std::span<const RlsEntry> entries) const {
  if (!active()) return false;
  for (const RlsEntry& entry : entries) {
    if (entry.key != descriptor_key || entry.value.empty()) continue;
    std::shared_ptr<const TenantRecord> record;
    if (spell) {
      Result<std::string> key = spell(entry.value);
      if (!key) continue;
      record = tenants->find(*key);
    } else {
      record = tenants->find(entry.value);
    }
    if (record != nullptr && record->blocked) return true;
  }
  return false;
}

}  // namespace spillway::rls
