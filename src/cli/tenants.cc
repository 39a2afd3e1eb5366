#include "src/cli/tenants.h"

#include <boost/beast/http/verb.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/cli/admin_client.h"
#include "src/cli/args.h"
#include "src/cli/nearest.h"
#include "src/server/admin_service.h"

namespace spillway::cli {
namespace {
namespace http = boost::beast::http;
namespace json = boost::json;

// A tenant's key as the segment after /v1/tenants/: percent_encoded, and a key whose segment would
// name something else (the import route, /v1/tenants/import, or the dot segments "." and "..",
// which a proxy on the way may resolve) with its first byte encoded too: the admin API routes by
// the path as sent and decodes the key after, so every key is reachable.
std::string key_segment(std::string_view key) {
  std::string out = percent_encoded(key);
  if (out == "import" || out == "." || out == "..") {
    out = std::string(out[0] == 'i' ? "%69" : "%2E") + out.substr(1);
  }
  return out;
}

int print_answer(const Result<AdminAnswer>& answer, std::ostream& out, std::ostream& err) {
  if (!answer) {
    err << "spillway tenants: " << answer.error().message << "\n";
    return 1;
  }
  if (answer->status >= 200 && answer->status < 300) {
    out << answer->body << "\n";
    return 0;
  }
  err << "spillway tenants: " << answer->status << ": " << admin_error_message(*answer) << "\n";
  return 1;
}

}  // namespace

int run_tenants(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                std::ostream& err) {
  auto args = Args::parse(
      argc, argv, first,
      {"admin", "token-file", "plan", "limit", "blocked", "cursor", "page", "all", "layer", "json"},
      {"blocked", "all", "json"});
  if (!args) {
    err << "spillway tenants: " << args.error().message << "\n";
    return 2;
  }
  const std::vector<std::string>& words = args->positional();
  const auto usage = [&](const std::string& what) {
    err << "spillway tenants: " << what
        << " (usage: spillway tenants set|get|delete KEY, reset KEY --layer L, list, import FILE; "
           "with --admin URL --token-file FILE)\n";
    return 2;
  };
  if (words.empty()) return usage("which command?");
  const std::string& command = words[0];
  const bool keyed =
      command == "set" || command == "get" || command == "delete" || command == "reset";
  if (!keyed && command != "list" && command != "import") {
    static constexpr std::string_view kTenantCommands[] = {"set",   "get",  "delete",
                                                           "reset", "list", "import"};
    return usage("unknown command \"" + command + "\"" + did_you_mean(command, kTenantCommands));
  }
  const std::size_t wanted = command == "list" ? 1 : 2;
  if (words.size() != wanted) {
    return usage(command + (wanted == 1 ? " takes no argument" : " takes one argument"));
  }
  const auto admin = args->get("admin");
  const auto token_file = args->get("token-file");
  if (!admin || !token_file) return usage("--admin and --token-file are required");
  auto endpoint = parse_admin_url(*admin);
  if (!endpoint) return usage(endpoint.error().message);
  auto tokens = server::read_admin_tokens(*token_file);
  if (!tokens) {
    err << "spillway tenants: " << tokens.error().message << "\n";
    return 2;
  }
  const std::string& token = tokens->front().token;

  if (command == "set") {
    json::object record;
    if (auto plan = args->get("plan")) record["plan"] = *plan;
    if (args->has("blocked")) record["blocked"] = true;
    if (auto limits = args->get("limit")) {
      json::object by_layer;
      std::string_view rest = *limits;
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view one = rest.substr(0, comma);
        const std::size_t equals = one.find('=');
        if (equals == std::string_view::npos || equals == 0) {
          return usage("--limit takes LAYER=RATE[,LAYER=RATE...], e.g. gateway=1200/min");
        }
        by_layer[one.substr(0, equals)] = one.substr(equals + 1);
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
      }
      record["limits"] = std::move(by_layer);
    }
    if (record.empty()) return usage("set needs --plan, --limit or --blocked");
    return print_answer(
        admin_request(*endpoint, token, http::verb::put, "/v1/tenants/" + key_segment(words[1]),
                      json::serialize(record)),
        out, err);
  }
  if (command == "reset") {
    const auto layer = args->get("layer");
    if (!layer) return usage("reset needs --layer (the layer whose counters to forget)");
    return print_answer(admin_request(*endpoint, token, http::verb::delete_,
                                      "/v1/tenants/" + key_segment(words[1]) + "/counters/" +
                                          percent_encoded(*layer)),
                        out, err);
  }
  if (command == "get" || command == "delete") {
    return print_answer(
        admin_request(*endpoint, token, command == "get" ? http::verb::get : http::verb::delete_,
                      "/v1/tenants/" + key_segment(words[1])),
        out, err);
  }
  if (command == "import") {
    std::string body;
    if (words[1] == "-") {
      std::stringstream buffer;
      buffer << in.rdbuf();
      body = buffer.str();
    } else {
      std::ifstream file(words[1], std::ios::binary);
      if (!file) {
        err << "spillway tenants: " << words[1] << " cannot be read\n";
        return 1;
      }
      std::stringstream buffer;
      buffer << file.rdbuf();
      body = buffer.str();
    }
    const bool csv = words[1].ends_with(".csv");
    return print_answer(admin_request(*endpoint, token, http::verb::post, "/v1/tenants/import",
                                      std::move(body), csv ? "text/csv" : "application/x-ndjson"),
                        out, err);
  }
  // list: one page, or every page with --all (one JSON answer per line; with --json, one
  // document: every page's tenants in one array, next_cursor null, the last page's total).
  auto page_size = args->get_int("page", 1, 1000);
  if (!page_size) return usage(page_size.error().message);
  std::string cursor = args->get("cursor").value_or("");
  const bool one_document = args->has("all") && args->has("json");
  json::array all_tenants;
  json::value last_total;
  while (true) {
    std::string target = "/v1/tenants?limit=" + std::to_string(page_size->value_or(100));
    if (auto plan = args->get("plan")) target += "&plan=" + percent_encoded(*plan);
    if (!cursor.empty()) target += "&cursor=" + percent_encoded(cursor);
    auto answer = admin_request(*endpoint, token, http::verb::get, target);
    std::ostringstream page;
    if (const int status = print_answer(answer, one_document ? page : out, err); status != 0) {
      return status;
    }
    if (!args->has("all")) return 0;
    boost::system::error_code ec;
    json::value value = json::parse(answer->body, ec);
    if (one_document && !ec && value.is_object()) {
      const json::object& object = value.as_object();
      if (const json::value* tenants = object.if_contains("tenants");
          tenants && tenants->is_array()) {
        for (const json::value& entry : tenants->as_array()) all_tenants.push_back(entry);
      }
      if (const json::value* total = object.if_contains("total")) last_total = *total;
    }
    if (ec || !value.is_object() || !value.as_object().contains("next_cursor") ||
        !value.as_object().at("next_cursor").is_string()) {
      break;
    }
    cursor = std::string(value.as_object().at("next_cursor").as_string());
  }
  if (one_document) {
    json::object document;
    document["tenants"] = std::move(all_tenants);
    document["next_cursor"] = nullptr;
    document["total"] = std::move(last_total);
    out << json::serialize(document) << "\n";
  }
  return 0;
}

}  // namespace spillway::cli
