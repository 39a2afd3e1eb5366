#include "fuzz/config_check.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "fuzz/check_util.h"
#include "spillway/policy_engine.h"
#include "src/policy/config.h"

namespace spillway::fuzz {
namespace {

// An upper bound on the number of lines yaml-cpp can see: it also breaks lines at '\r' and, in
// UTF-8 and UTF-16 input, at NEL, LS and PS, whose encodings contain a byte >= 0x80 or 0x85.
std::size_t max_lines(std::string_view text) {
  return 1 + static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
           const auto u = static_cast<unsigned char>(c);
           return u == '\n' || u == '\r' || u >= 0x80;
         }));
}

void check_error(std::string_view text, const std::string& message) {
  if (!message.starts_with("line ")) violated("config error does not name a line", message);
  std::size_t line = 0;
  const char* digits = message.data() + 5;
  const char* end = message.data() + message.size();
  const auto [after, ec] = std::from_chars(digits, end, line);
  if (ec != std::errc() || after == digits || std::string_view(after, end).substr(0, 2) != ": ") {
    violated("config error does not start with \"line N: \"", message);
  }
  if (line < 1 || line > max_lines(text)) {
    violated("config error names a line the text does not have", message);
  }
  if (message.find_first_of("\r\n") != std::string::npos) {
    violated("config error is more than one line", message);
  }
}

}  // namespace

void check_config_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<policy::Config> config = policy::parse_config(text);
  const Result<policy::Config> again = policy::parse_config(text);
  if (config.has_value() != again.has_value()) {
    violated("parsing the same config twice gave a config once and an error once");
  }
  if (!config) {
    if (config.error().code != Errc::kInvalidArgument) {
      violated("config error is not kInvalidArgument", config.error().message);
    }
    if (again.error().message != config.error().message) {
      violated("parsing the same config twice gave two errors",
               config.error().message + " / " + again.error().message);
    }
    check_error(text, config.error().message);
    return;
  }
  if (!(*config == *again)) violated("parsing the same config twice gave two configs");
  const auto built = policy::Policy::make(config->policy);
  if (!built) violated("a config that parses does not build", built.error().message);
}

}  // namespace spillway::fuzz
