// The config file's tenants section: what `source: store` layers decide before this instance's
// copy of the tenant records was first loaded (see config.h).
#include <string>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"

namespace spillway::policy {

void parse_tenants(const YAML::Node& node, TenantsConfig& tenants) {
  if (node.IsNull()) return;
  expect_map(node, "tenants", "a mapping of until_loaded");
  Fields fields(node, "tenants", {"until_loaded"});
  collect([&] {
    read_choice(fields, "until_loaded",
                {{"deny", UntilLoaded::kDeny}, {"defaults", UntilLoaded::kDefaults}},
                tenants.until_loaded);
  });
}

}  // namespace spillway::policy
