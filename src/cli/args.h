// Command-line flags: "--name value" or "--name=value", plus positional arguments; "--" ends the
// options (every later argument is positional, even one starting with "--").
// Errors are one line naming the argument (an unknown option names the nearest known one, "did
// you mean --listen?"); the caller prints them and exits with status 2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/duration.h"
#include "spillway/error.h"

namespace spillway::cli {

class Args {
 public:
  // Parses argv[first..argc). Only flags in `known` are accepted; `boolean` ones take no value.
  static Result<Args> parse(int argc, char** argv, int first, const std::set<std::string>& known,
                            const std::set<std::string>& boolean = {});

  bool has(const std::string& flag) const { return flags_.contains(flag); }
  std::optional<std::string> get(const std::string& flag) const;
  // A whole number in [min, max]; the error names the flag.
  Result<std::optional<std::int64_t>> get_int(const std::string& flag, std::int64_t min,
                                              std::int64_t max) const;
  // A DURATION (spillway/duration.h), µs; the error names the flag.
  Result<std::optional<Micros>> get_duration(const std::string& flag) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> flags_;
  std::vector<std::string> positional_;
};

// Parses all of `text` as a decimal integer.
std::optional<std::int64_t> parse_int(std::string_view text);

}  // namespace spillway::cli
