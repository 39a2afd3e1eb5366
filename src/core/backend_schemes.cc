// The table of backend URL schemes, looked up (see backend_schemes.h).
#include "src/core/backend_schemes.h"

namespace spillway {

const BackendScheme* find_backend_scheme(std::string_view url) {
  for (const BackendScheme& scheme : kBackendSchemes) {
    if (scheme.kind == BackendKind::kMemory) {
      if (url == scheme.name || url == scheme.prefix) return &scheme;
    } else if (url.starts_with(scheme.prefix)) {
      return &scheme;
    }
  }
  return nullptr;
}

bool is_redis_backend_url(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  return scheme != nullptr && scheme->kind != BackendKind::kMemory;
}

}  // namespace spillway
