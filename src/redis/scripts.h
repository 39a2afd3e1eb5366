// The five Lua scripts (lua/*.lua, compiled in) and their SHA-1 digests for EVALSHA.
#pragma once

#include <string>
#include <string_view>

#include "spillway/limit.h"

namespace spillway::redis {

// The complete script text for an algorithm (lua/prelude.lua followed by lua/<name>.lua).
std::string_view script_source(Algorithm algorithm);

// Lower-case hex SHA-1 of script_source(algorithm), as Redis names it; computed once.
const std::string& script_sha(Algorithm algorithm);

// The all-or-nothing script over several layers (lua/policy.lua, with all five algorithms).
std::string_view policy_script_source();
const std::string& policy_script_sha();

}  // namespace spillway::redis
