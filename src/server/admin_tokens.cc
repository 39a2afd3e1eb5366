// The admin API's tokens (src/server/admin_service.h): reading server.admin_token_file, the set
// in force (swapped whole on reload), and a request's bearer token checked against it in
// constant time (as digests, every token compared); the 401 for a request without a valid one,
// logged at most a line a second.
// Thread safety: from any thread; the set in force is a shared_ptr guarded by tokens_mutex_.
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/text.h"
#include "src/policy/names.h"
#include "src/server/admin_service.h"
#include "src/server/decision_response.h"

namespace spillway::server {
namespace {

// Equal bytes, in time that depends on the length only (both are digests of one length).
bool same_digest(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

}  // namespace

Result<std::vector<AdminToken>> read_admin_tokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("admin_token_file " + quote_for_error(path) + " cannot be read");
  std::vector<AdminToken> tokens;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = "admin_token_file " + path + " line " + std::to_string(number);
    std::string_view text = trim(line, " \t\r");
    if (text.empty() || text.front() == '#') continue;
    AdminToken token;
    const std::size_t space = text.find_first_of(" \t");
    if (space == std::string_view::npos) {
      token = {"admin", std::string(text)};
    } else {
      token = {std::string(text.substr(0, space)), std::string(trim(text.substr(space + 1)))};
      if (!policy::is_name(token.name)) {
        return invalid_argument(where + ": the name must be letters, digits, '_' or '-'");
      }
    }
    if (token.token.size() < 16 || token.token.find_first_of(" \t") != std::string::npos) {
      return invalid_argument(where + ": a token is at least 16 bytes without spaces");
    }
    for (const AdminToken& other : tokens) {
      if (other.token == token.token) return invalid_argument(where + ": the same token twice");
    }
    tokens.push_back(std::move(token));
  }
  if (tokens.empty()) return invalid_argument("admin_token_file " + path + " holds no token");
  return tokens;
}

std::size_t AdminService::replace_tokens(std::vector<AdminToken> tokens) {
  auto hashed = std::make_shared<TokenSet>();
  for (AdminToken& token : tokens) {
    hashed->push_back({std::move(token.name), token_digest_.of(token.token)});
  }
  const std::size_t count = hashed->size();
  const std::lock_guard lock(tokens_mutex_);
  tokens_ = std::move(hashed);
  return count;
}

Result<std::size_t> AdminService::reload_tokens(const std::string& path) {
  auto tokens = read_admin_tokens(path);
  if (!tokens) return std::unexpected(tokens.error());
  return replace_tokens(std::move(*tokens));
}

std::shared_ptr<const AdminService::TokenSet> AdminService::tokens() const {
  const std::lock_guard lock(tokens_mutex_);
  return tokens_;
}

std::size_t AdminService::token_count() const { return tokens()->size(); }

std::optional<std::string> AdminService::authenticate(const HttpRequest& request) const {
  const std::string* header = request.header("authorization");
  if (header == nullptr) return std::nullopt;
  std::string_view value = *header;
  if (!ascii_istarts_with(value, "bearer ")) return std::nullopt;
  const std::string digest = token_digest_.of(trim(value.substr(7)));
  const std::shared_ptr<const TokenSet> tokens = this->tokens();
  const std::string* found = nullptr;
  for (const Hashed& token : *tokens) {  // every token compared: the time does not say which
    if (same_digest(token.digest, digest)) found = &token.name;
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

HttpResponse AdminService::refused(const HttpRequest& request) const {
  const bool carried = request.header("authorization") != nullptr;
  refused_log_.write("spillway admin: refused " + std::string(logged_method(request.method)) + " " +
                     quote_for_error(logged_path(request.target), 80) + " from " +
                     request.peer_address + ": " +
                     (carried ? "wrong token" : "no Authorization: Bearer token"));
  HttpResponse response =
      error_response(401, carried ? "the bearer token is not one of server.admin_token_file"
                                  : "the admin API needs Authorization: Bearer <token>");
  response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"spillway-admin\"");
  response.close_connection = true;  // no keep-alive without a token
  return response;
}

}  // namespace spillway::server
