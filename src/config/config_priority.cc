// The config's `priority:` section (docs/SPEC.md §2.4, §7): which request attribute carries a
// request's priority, its levels from the highest down, and the level of a request that says none.
//   priority:
//     attribute: priority                     # the default
//     levels: [critical, normal, sheddable]
//     default: normal
// Layers keep shares of their capacity for levels with `reserve` (config_layers.cc).
#include <algorithm>
#include <string>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"
#include "src/policy/names.h"

namespace spillway::policy {

PrioritySpec parse_priority(const YAML::Node& node) {
  const std::string path = "priority";
  expect_map(node, path, "a mapping of attribute, levels and default");
  Fields fields(node, path, {"attribute", "levels", "default"});
  PrioritySpec spec;
  if (const Entry* attribute = fields.find("attribute")) {
    const std::string attribute_path = fields.path("attribute");
    spec.attribute = scalar(attribute->value, attribute_path, "an attribute name such as priority");
    if (auto problem = attribute_name_problem(spec.attribute)) {
      fail(attribute->value, attribute_path,
           "attribute " + quote_for_error(spec.attribute) + " " + *problem);
    }
  }
  const Entry& levels = fields.require("levels");
  const std::string levels_path = fields.path("levels");
  if (!levels.value.IsSequence() || levels.value.size() < 2) {
    fail(levels.value, levels_path,
         "must list at least two levels from the highest down, such as [critical, normal]");
  }
  for (std::size_t i = 0; i < levels.value.size(); ++i) {
    const std::string item_path = levels_path + "[" + std::to_string(i) + "]";
    std::string level = scalar(levels.value[i], item_path, "a level name such as critical");
    if (!is_name(level)) {
      fail(levels.value[i], item_path,
           "level " + quote_for_error(level) + " must be letters, digits, '_' or '-'");
    }
    if (std::find(spec.levels.begin(), spec.levels.end(), level) != spec.levels.end()) {
      fail(levels.value[i], item_path, "level " + quote_for_error(level) + " is listed twice");
    }
    spec.levels.push_back(std::move(level));
  }
  const Entry& fallback = fields.require("default");
  spec.default_level = scalar(fallback.value, fields.path("default"), "a level name");
  if (std::find(spec.levels.begin(), spec.levels.end(), spec.default_level) == spec.levels.end()) {
    fail(fallback.value, fields.path("default"),
         quote_for_error(spec.default_level) + " is not one of the levels");
  }
  return spec;
}

}  // namespace spillway::policy
