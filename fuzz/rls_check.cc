#include "fuzz/rls_check.h"

#include <string>
#include <string_view>
#include <vector>

#include "fuzz/check_util.h"
#include "spillway/memory_store.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_engine.h"
#include "src/rls/rls_match.h"

namespace spillway::fuzz {
namespace {

// Every path from the top of the rules to a node, as request entries that reach it.
void collect_paths(const std::vector<rls::DescriptorRule>& level,
                   std::vector<rls::RlsEntry>& prefix,
                   std::vector<std::vector<rls::RlsEntry>>& out) {
  for (const rls::DescriptorRule& rule : level) {
    if (out.size() >= 64) return;  // enough to exercise the engine; bounded work per input
    prefix.push_back({rule.key, rule.wildcard ? rule.value + "x" : rule.value});
    out.push_back(prefix);
    collect_paths(rule.descriptors, prefix, out);
    prefix.pop_back();
  }
}

void check_decisions(const rls::DomainRules& domain) {
  std::vector<std::vector<rls::RlsEntry>> paths;
  std::vector<rls::RlsEntry> prefix;
  collect_paths(domain.descriptors, prefix, paths);
  if (paths.empty()) return;

  auto clock = std::make_shared<ManualClock>(1'700'000'000'000'000);
  MemoryStore store(MemoryStoreOptions{.clock = clock});
  auto rules = std::make_shared<rls::RlsRules>();
  rules->domains.emplace(domain.domain, domain);
  rls::RlsEngine engine(store, rules, {.clock = clock});

  rls::RlsRequest request{.domain = domain.domain};
  for (const auto& path : paths) {
    if (path.size() > rls::kMaxEntries || request.descriptors.size() >= rls::kMaxDescriptors) {
      continue;
    }
    request.descriptors.push_back({.entries = path});
  }
  if (request.descriptors.empty()) return;
  for (int round = 0; round < 2; ++round) {
    bool answered = false;
    engine.should_rate_limit(request, [&](Result<rls::RlsResponse> response) {
      answered = true;
      if (!response) {
        // Only a key too long for the store may be refused.
        if (response.error().message.find("bytes, at most") == std::string::npos) {
          violated("rules that load could not decide", response.error().message);
        }
        return;
      }
      if (response->statuses.size() != request.descriptors.size()) {
        violated("the answer does not have one status per descriptor");
      }
      for (std::size_t i = 0; i < response->statuses.size(); ++i) {
        const rls::DescriptorStatus& status = response->statuses[i];
        const rls::Match match = rls::match_descriptor(domain, request.descriptors[i].entries);
        if (status.code == rls::Code::kOverLimit && match.rule == nullptr) {
          violated("a descriptor no rule matches was over the limit");
        }
        if (match.rule != nullptr && !match.rule->rate_limit) {
          violated("a match without a rate limit was returned");
        }
      }
    });
    if (!answered) violated("the engine did not answer a memory-store request at once");
  }
}

}  // namespace

void check_rls_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<rls::DomainRules> rules = rls::parse_rls_yaml(text);
  const Result<rls::DomainRules> again = rls::parse_rls_yaml(text);
  if (rules.has_value() != again.has_value()) {
    violated("parsing the same rules twice gave rules once and an error once");
  }
  if (!rules) {
    if (rules.error().code != Errc::kInvalidArgument) {
      violated("rules error is not kInvalidArgument", rules.error().message);
    }
    if (again.error().message != rules.error().message) {
      violated("parsing the same rules twice gave two errors",
               rules.error().message + " / " + again.error().message);
    }
    check_line_error(text, rules.error().message);
    return;
  }
  if (rules->domain.empty()) violated("rules loaded with an empty domain");
  check_decisions(*rules);
}

}  // namespace spillway::fuzz
