#include "fuzz/config_check.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "fuzz/check_util.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"

namespace spillway::fuzz {

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
    // One line per error, each "line N: …" (the loader reports every error of the text).
    std::string_view errors = config.error().message;
    if (errors.empty() || errors.back() == '\n') violated("config error has an empty line", errors);
    while (!errors.empty()) {
      const std::size_t end = errors.find('\n');
      check_line_error(text, std::string(errors.substr(0, end)));
      errors.remove_prefix(end == std::string_view::npos ? errors.size() : end + 1);
    }
    return;
  }
  if (!(*config == *again)) violated("parsing the same config twice gave two configs");
  const auto built = policy::Policy::make(config->policy);
  if (!built) violated("a config that parses does not build", built.error().message);
}

}  // namespace spillway::fuzz
