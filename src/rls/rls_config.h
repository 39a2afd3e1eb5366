// The rules of Envoy's rate limit service, in envoyproxy/ratelimit's YAML format (docs/SPEC.md
// §9): one domain per file, a tree of descriptors, a rate limit on the nodes that have one.
//
//   domain: mongo_cps
//   descriptors:
//     - key: database
//       value: users                 # optional; "prefix*" matches any value with that prefix
//       rate_limit:
//         unit: second               # second, minute, hour, day, week, month (30 d), year (365 d)
//         requests_per_unit: 500
//         name: users_db             # optional; `replaces: [{name: …}]` on another rule drops it
//         unlimited: false           # true: matched but never limited
//         algorithm: gcra            # spillway: any of the five (default fixed_window)
//         burst: 100                 # spillway: token_bucket and gcra only
//         period: 5m                 # spillway: instead of unit, any period
//         charge: after_response     # spillway: a descriptor that carries its own hits_addend
//                                    # (Envoy's apply_on_stream_done: the usage measured, e.g.
//                                    # LLM tokens) is charged that many without a check, as debt
//                                    # (always OK); without one it is checked as usual (default
//                                    # on_request: every descriptor is checked)
//       shadow_mode: false           # counted, never denies
//       detailed_metric: false       # metrics labelled with the request's values
//       descriptors: [...]           # the next entry of the request's descriptor
//
// Errors name the line (1-based) and the field: "line 7: descriptors[0].rate_limit.unit: …".
// Plain values, immutable once loaded; safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "spillway/limit.h"

namespace spillway::rls {

// Envoy's RateLimitResponse.RateLimit.Unit (and type.v3.RateLimitUnit): the same numbers.
enum class Unit : int { kUnknown = 0, kSecond, kMinute, kHour, kDay, kMonth, kYear, kWeek };

// The unit's length (month 30 days, year 365 days, as envoyproxy/ratelimit); 0 for kUnknown.
Micros unit_length(Unit unit);
// "second" … "week"; "unknown".
std::string_view unit_name(Unit unit);
// The unit whose length is exactly `period`, or kUnknown.
Unit unit_of_period(Micros period);

// A rule's limit, as the configuration gave it.
struct RuleLimit {
  std::string name;                   // optional; what `replaces` refers to
  std::vector<std::string> replaces;  // names of rules this one drops from the same request
  bool unlimited = false;             // matched, never limited (no counter)
  // charge: after_response: a descriptor with its own hits_addend is charged without a check.
  bool charge_after_response = false;
  std::uint32_t requests_per_unit = 0;
  Unit unit = Unit::kUnknown;  // kUnknown when given as `period` that is no unit
  // Set unless unlimited or requests_per_unit is 0 (every request is over the limit).
  std::optional<Limit> limit;
};

struct DescriptorRule {
  std::string key;
  std::string value;      // "" = any value (key only)
  bool wildcard = false;  // the value ended with '*': `value` is the prefix
  std::optional<RuleLimit> rate_limit;
  bool shadow_mode = false;
  bool detailed_metric = false;
  std::string stat_name;  // "key_value" or "key" (for a wildcard "key_prefix*")
  std::vector<DescriptorRule> descriptors;
};

struct DomainRules {
  std::string domain;
  std::string source;  // the file it came from (for messages)
  std::vector<DescriptorRule> descriptors;
};

struct RlsRules {
  std::map<std::string, DomainRules, std::less<>> domains;
  std::vector<std::string> files;  // what was read, in order
};

// One file's text. `source` prefixes nothing; it is recorded in the result.
Result<DomainRules> parse_rls_yaml(std::string_view yaml_text, std::string source = {});

// A YAML file, or every *.yaml / *.yml file of a directory (not hidden ones, not recursively;
// symbolic links followed, as in a Kubernetes ConfigMap volume). A domain may appear only once.
// Errors start with the file's path: "rules/a.yaml: line 3: descriptors[0].key: …".
Result<RlsRules> load_rls_rules(const std::string& path);

// The files load_rls_rules(path) would read with their contents: what a watcher compares to see
// a change (a symlink swap changes it as well as an edit). Errors are ignored (an empty string).
std::string rls_rules_fingerprint(const std::string& path);

}  // namespace spillway::rls
