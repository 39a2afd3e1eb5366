// The Lua scripts (lua/*.lua, compiled in by cmake/embed_lua.cmake) and their SHA-1 digests for
// EVALSHA.
#pragma once

#include <string>
#include <string_view>

#include "spillway/limit.h"

namespace spillway::redis {

// The complete script text for an algorithm (lua/prelude.lua, lua/<name>.lua, lua/batch.lua).
std::string_view script_source(Algorithm algorithm);

// Lower-case hex SHA-1 of script_source(algorithm), as Redis names it; computed once.
const std::string& script_sha(Algorithm algorithm);

// The all-or-nothing script over several layers (lua/all_or_nothing.lua, with every algorithm).
std::string_view all_or_nothing_script_source();
const std::string& all_or_nothing_script_sha();

// Undoes a reservation of the all-or-nothing script (lua/refund.lua).
std::string_view refund_script_source();
const std::string& refund_script_sha();

}  // namespace spillway::redis
