// What serve and validate warn about (docs/SPEC.md §5.2): a listener that carries bearer tokens
// off loopback without TLS, and a secret file that group or others can read or write.
// Pure functions of their arguments and the file's mode bits; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spillway::cli {

// Whether a listen host only takes connections from this machine: 127.0.0.0/8, ::1,
// ::ffff:127.x.y.z or "localhost". "0.0.0.0" and "::" (every interface) are not.
bool is_loopback_host(std::string_view host);

// Why the secret file at `path` is exposed, e.g. "mode 0644: group and others can read it (chmod
// 600 FILE)"; nullopt when only its owner can read and write it, or when it cannot be examined
// (reading it reports that).
std::optional<std::string> exposed_secret_file(const std::string& path);

}  // namespace spillway::cli
