#include "src/cli/args.h"

#include <charconv>

#include "src/cli/nearest.h"

namespace spillway::cli {

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

Result<Args> Args::parse(int argc, char** argv, int first, const std::set<std::string>& known,
                         const std::set<std::string>& boolean) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      // Everything after "--" is positional, even what starts with "--".
      for (++i; i < argc; ++i) args.positional_.emplace_back(argv[i]);
      break;
    }
    if (!arg.starts_with("--")) {
      args.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (std::size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (!known.contains(name)) {
      return invalid_argument("unknown option --" + name + did_you_mean(name, known, "--"));
    }
    if (boolean.contains(name)) {
      if (value) return invalid_argument("option --" + name + " takes no value");
      args.flags_[name] = "";
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) return invalid_argument("option --" + name + " needs a value");
      value = argv[++i];
    }
    if (args.flags_.contains(name)) return invalid_argument("option --" + name + " given twice");
    args.flags_[name] = *value;
  }
  return args;
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = flags_.find(flag);
  if (it == flags_.end()) return std::nullopt;
  return it->second;
}

Result<std::optional<std::int64_t>> Args::get_int(const std::string& flag, std::int64_t min,
                                                  std::int64_t max) const {
  std::optional<std::string> text = get(flag);
  if (!text) return std::optional<std::int64_t>{};
  std::optional<std::int64_t> value = parse_int(*text);
  if (!value || *value < min || *value > max) {
    return invalid_argument("--" + flag + " \"" + *text + "\" must be a whole number from " +
                            std::to_string(min) + " to " + std::to_string(max));
  }
  return value;
}

Result<std::optional<Micros>> Args::get_duration(const std::string& flag) const {
  std::optional<std::string> text = get(flag);
  if (!text) return std::optional<Micros>{};
  Result<Micros> value = parse_duration(*text);
  if (!value) return invalid_argument("--" + flag + ": " + value.error().message);
  return std::optional<Micros>(*value);
}

}  // namespace spillway::cli
