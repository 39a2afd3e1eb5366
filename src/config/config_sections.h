// The sections of the config file, each read by its own file: server (config_server.cc),
// backend (config_backend.cc), rls (config_rls.cc), tenants (config_tenants.cc) and layers
// (config_layers.cc); config.cc reads
// the document and calls them. Each section reader fills its part of a Config from the section's
// YAML node and reports mistakes through the field readers of yaml_fields.h (ConfigError, or
// recorded in the parse's ReadLog). Internal to spillway_config; reentrant, one parse per thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include "src/config/config.h"

namespace spillway::policy {

// `server:` (a null node leaves the defaults).
void parse_server(const YAML::Node& node, ServerConfig& server);

// `backend:` (a null node leaves the defaults).
void parse_backend(const YAML::Node& node, BackendConfig& backend);

// `rls:` (a null node leaves the defaults).
void parse_rls(const YAML::Node& node, RlsConfig& rls);

// `tenants:` (a null node leaves the defaults).
void parse_tenants(const YAML::Node& node, TenantsConfig& tenants);

// `priority:` (docs/SPEC.md §2.4): the attribute, the levels from the highest down, the default.
PrioritySpec parse_priority(const YAML::Node& node);

// `layers:`: a non-empty list; each layer's rates are checked by Limit::make, so that a config
// that validates can always be built. A layer's `reserve` names levels of `priority`.
PolicySpec parse_layers(const YAML::Node& node, const std::optional<PrioritySpec>& priority);

}  // namespace spillway::policy
