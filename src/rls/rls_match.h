// Finding the rule for one request descriptor, by envoyproxy/ratelimit's rules: at each level the
// entry's key with its exact value, else the first wildcard ("prefix*") in file order whose
// prefix the value starts with, else the key alone (a rule without value). No backtracking. The
// rule applies only when the request's last entry lands on a node with a rate_limit; a request
// deeper or shallower than the rules gets no rule. Pure functions over immutable rules.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "src/rls/rls_config.h"
#include "src/rls/rls_request.h"

namespace spillway::rls {

struct Match {
  const DescriptorRule* rule = nullptr;  // the node of the last entry; null: no rule
  // "key_value.key2" from the rules' stat names (or the request's values, with detailed_metric
  // on the matched node): the metrics label.
  std::string stat_path;
};

// The node of the last entry with a rate_limit, or an empty Match.
Match match_descriptor(const DomainRules& domain, std::span<const RlsEntry> entries);

// The limiter's key for a domain and a descriptor's entries: "/rls:<len>:<domain>" then
// ":<len>:<key>:<len>:<value>" per entry. Length prefixes keep any bytes from shifting; "/rls:"
// can begin neither a policy layer's key nor /v1/limit's (src/policy/keys.h).
std::string rls_key(std::string_view domain, std::span<const RlsEntry> entries);

}  // namespace spillway::rls
