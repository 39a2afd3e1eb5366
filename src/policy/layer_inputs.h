// What a policy layer reads from a request and from a tenant record, shared by the files that
// implement Policy (spillway/policy_engine.h): an attribute by name, the errors that name a
// missing or malformed one, and a record's own rate for a layer. Private to src/policy.
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "spillway/error.h"
#include "spillway/limit.h"
#include "spillway/policy_spec.h"
#include "spillway/tenant_directory.h"

namespace spillway::policy {

// "attribute \"api_key\" is required (layer gateway)", with the attribute as the error's field.
inline std::unexpected<Error> missing_attribute(const std::string& attribute,
                                                const std::string& layer) {
  return std::unexpected(Error{Errc::kInvalidArgument,
                               "attribute \"" + attribute + "\" is required (layer " + layer + ")",
                               attribute});
}

inline const std::string* find_attribute(const Attributes& attributes, const std::string& name) {
  auto it = attributes.find(name);
  return it == attributes.end() ? nullptr : &it->second;
}

// The error of a bad path attribute, naming the attribute.
inline Error with_field(Error error, const std::string& attribute) {
  error.message = "\"" + attribute + "\": " + error.message;
  error.field = attribute;
  return error;
}

// A tenant record's own rate for `layer`, as a Limit of the layer's algorithm; null when the
// record has none for it (or one the algorithm refuses: the admin API checks them, a record
// written before a policy change may not fit). Built per request: custom contracts are few, and
// a Limit is a few numbers.
inline std::shared_ptr<const Limit> custom_limit(const LayerSpec& layer,
                                                 const TenantRecord& record) {
  auto own = record.limits.find(layer.name);
  if (own == record.limits.end()) return nullptr;
  Result<Limit> made = Limit::make(layer.algorithm, own->second.limit, own->second.period,
                                   std::nullopt, layer.max_delay);
  return made ? std::make_shared<const Limit>(*made) : nullptr;
}

}  // namespace spillway::policy
