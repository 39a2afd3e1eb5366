// The command line's help (docs/SPEC.md §4): `spillway help` (the commands), and for each command
// the text that `spillway help CMD` and `spillway CMD --help` print: its synopsis, what it does,
// and every option with its default (or "required") and the values it takes (algorithm names,
// pattern names, duration units, backend URLs). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace spillway::cli {

// The commands, in the order help lists them.
std::span<const std::string_view> command_names();

// "usage: spillway <command> [options]" and one line per command.
std::string overview_help();

// `command`'s full help, starting "usage: spillway <command> "; nullopt for an unknown command.
std::optional<std::string> command_help(std::string_view command);

}  // namespace spillway::cli
