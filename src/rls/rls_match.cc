#include "src/rls/rls_match.h"

namespace spillway::rls {
namespace {

const DescriptorRule* find_child(const std::vector<DescriptorRule>& level, const RlsEntry& entry) {
  for (const DescriptorRule& rule : level) {
    if (!rule.wildcard && !rule.value.empty() && rule.key == entry.key &&
        rule.value == entry.value) {
      return &rule;
    }
  }
  for (const DescriptorRule& rule : level) {
    if (rule.wildcard && rule.key == entry.key && entry.value.starts_with(rule.value)) {
      return &rule;
    }
  }
  for (const DescriptorRule& rule : level) {
    if (!rule.wildcard && rule.value.empty() && rule.key == entry.key) return &rule;
  }
  return nullptr;
}

void append_part(std::string& key, std::string_view part) {
  key += ':';
  key += std::to_string(part.size());
  key += ':';
  key += part;
}

}  // namespace

Match match_descriptor(const DomainRules& domain, std::span<const RlsEntry> entries) {
  const std::vector<DescriptorRule>* level = &domain.descriptors;
  std::string path;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const DescriptorRule* rule = find_child(*level, entries[i]);
    if (rule == nullptr) return {};
    path += (i == 0 ? "" : ".") + rule->stat_name;
    if (i + 1 == entries.size()) {
      if (!rule->rate_limit) return {};
      if (rule->detailed_metric) {
        // Labelled with the request's own values instead of the rules'.
        path.clear();
        for (const RlsEntry& e : entries) {
          path += (path.empty() ? "" : ".") + e.key + "_" + e.value;
        }
      }
      return Match{rule, std::move(path)};
    }
    if (rule->descriptors.empty()) return {};
    level = &rule->descriptors;
  }
  return {};
}

std::string rls_key(std::string_view domain, std::span<const RlsEntry> entries) {
  std::string key = "/rls";
  append_part(key, domain);
  for (const RlsEntry& entry : entries) {
    append_part(key, entry.key);
    append_part(key, entry.value);
  }
  return key;
}

}  // namespace spillway::rls
