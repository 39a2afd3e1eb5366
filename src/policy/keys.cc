#include "src/policy/keys.h"

#include "src/core/decimal.h"

namespace spillway::policy {

void append_key_part(std::string& key, std::string_view value) {
  key.push_back(':');
  append_decimal(key, value.size());
  key.append(1, ':').append(value);
}

Result<void> check_layer_key(const std::string& key, std::string_view layer) {
  if (key.size() <= kMaxKeyBytes) return {};
  return invalid_argument("the key of layer " + std::string(layer) + " is longer than " +
                          std::to_string(kMaxKeyBytes) + " bytes");
}

Result<std::string> limit_endpoint_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxLimitEndpointKeyBytes) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "\"key\" must be a string of 1 to " +
                                     std::to_string(kMaxLimitEndpointKeyBytes) + " bytes, got " +
                                     std::to_string(key.size()),
                                 "key"});
  }
  std::string stored;
  stored.reserve(kLimitEndpointPrefix.size() + key.size());
  stored.append(kLimitEndpointPrefix).append(key);
  return stored;
}

}  // namespace spillway::policy
