#include "src/policy/keys.h"

#include "src/core/decimal.h"

namespace spillway::policy {

void append_key_part(std::string& key, std::string_view value) {
  key.push_back(':');
  append_decimal(key, value.size());
  key.append(1, ':').append(value);
}

std::optional<LayerKeyParts> parse_layer_key(std::string_view key) {
  const std::size_t colon = key.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  LayerKeyParts parts{.layer = key.substr(0, colon), .values = {}};
  std::string_view rest = key.substr(colon);
  while (!rest.empty()) {
    if (rest.front() != ':') return std::nullopt;
    rest.remove_prefix(1);
    const std::size_t length_end = rest.find(':');
    if (length_end == std::string_view::npos || length_end == 0) return std::nullopt;
    std::size_t length = 0;
    for (const char c : rest.substr(0, length_end)) {
      if (c < '0' || c > '9' || length > rest.size()) return std::nullopt;  // no overflow
      length = length * 10 + static_cast<std::size_t>(c - '0');
    }
    rest.remove_prefix(length_end + 1);
    if (length > rest.size()) return std::nullopt;
    parts.values.push_back(rest.substr(0, length));
    rest.remove_prefix(length);
  }
  return parts;
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
