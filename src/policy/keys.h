// The keys under which the server's limiter state lives (docs/SPEC.md §3): two schemes that can
// never produce the same key, whatever bytes clients send.
//   a policy layer:  "<layer>:<len>:<value>[:<len>:<value>…]"  (layer names are letters, digits,
//                    '_' or '-'; every value is preceded by its length, so values cannot shift)
//   POST /v1/limit:  "/v1/limit:<key>"  ('/' cannot begin a layer name)
//   (Envoy's rate limit service uses a third, "/rls:…", built in src/rls/rls_match.h.)
// Every final key is at most kMaxKeyBytes, checked here, once. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "spillway/store.h"

namespace spillway::policy {

// Appends ":<len>:<value>" to a layer's key.
void append_key_part(std::string& key, std::string_view value);

// A layer's key read back (for /v1/stats): the layer's name and its values in order, viewing
// `key`. nullopt when `key` is not "<layer>:<len>:<value>[…]" (no ':' after the layer, a length
// that is not decimal digits or that runs past the end).
struct LayerKeyParts {
  std::string_view layer;
  std::vector<std::string_view> values;
};
std::optional<LayerKeyParts> parse_layer_key(std::string_view key);

// An error unless a layer's finished key fits in kMaxKeyBytes.
Result<void> check_layer_key(const std::string& key, std::string_view layer);

inline constexpr std::string_view kLimitEndpointPrefix = "/v1/limit:";
// The longest key a client may give POST /v1/limit.
inline constexpr std::size_t kMaxLimitEndpointKeyBytes = kMaxKeyBytes - kLimitEndpointPrefix.size();

// The stored key for POST /v1/limit's "key"; an error (field "key") names the allowed length.
Result<std::string> limit_endpoint_key(std::string_view key);

}  // namespace spillway::policy
