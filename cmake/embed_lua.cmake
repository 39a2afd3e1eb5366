# Generates OUTPUT (a .cc file) holding the Redis scripts as strings, one per algorithm of the list
# (include/spillway/algorithm_list.h, read as LIST_FILE) and the all-or-nothing script:
#   script of algorithm a:  prelude.lua + batch.lua with <a>.lua (a block of statements) and
#                           write.lua pasted in place of its "-- @algorithm" line: no function
#                           per check
#   all-or-nothing script:  prelude.lua + every <a>.lua + write.lua wrapped in
#                           "local function decide_<a>", every mark block wrapped in
#                           "local function mark_<a>"
#                           + the id tables + all_or_nothing.lua
#   settle script:          prelude.lua + every decide_<a>, every settle block + write.lua
#                           wrapped in "local function settle_<a>" + the id tables + settle.lua
#   refund script:          refund.lua (undoes a reservation of the all-or-nothing script)
# An algorithm's file holds three blocks: the decide block, then after a "  -- @mark" line the
# mark block (sets mark_at, mark_debt and, for the buckets, mark_since from the state right after
# a charge), then after a "  -- @settle" line the settle block (usage-based limits: sets done,
# and state and idle_at as the decide block does). Each mirrors the C++ function of the same
# name in src/core/<a>.cc.
#   standalone scripts:     tenant_write.lua, tenant_read.lua, tenant_scan.lua, reset.lua,
#                           probe.lua, quota_share.lua as they are
# The id table maps each algorithm's number (its position in the list, as the C++ sends it) to
# its decide function; static_asserts in the output check that the C++ list says the same.
include(${CMAKE_CURRENT_LIST_DIR}/algorithm_list.cmake)
spillway_read_algorithm_list(${LIST_FILE} algorithms)

file(READ ${LUA_DIR}/prelude.lua prelude)
file(READ ${LUA_DIR}/batch.lua batch)
file(READ ${LUA_DIR}/write.lua write)
file(READ ${LUA_DIR}/all_or_nothing.lua all_or_nothing)
file(READ ${LUA_DIR}/refund.lua refund)
file(READ ${LUA_DIR}/settle.lua settle)

set(checks "")
set(scripts "")
set(every_algorithm "")
set(every_mark "")
set(every_settle "")
set(id_table "local decide_by_id = {")
set(mark_table "local mark_by_id = {")
set(settle_table "local settle_by_id = {")
set(index 0)
foreach(name IN LISTS algorithms)
  if(NOT EXISTS ${LUA_DIR}/${name}.lua)
    message(FATAL_ERROR "algorithm ${name} has no script: lua/${name}.lua is missing")
  endif()
  file(READ ${LUA_DIR}/${name}.lua whole)
  if(NOT whole MATCHES "^  -- ${name}: ")
    message(FATAL_ERROR "lua/${name}.lua must be a block that starts with '  -- ${name}: '")
  endif()
  string(FIND "${whole}" "  -- @mark\n" mark_at)
  string(FIND "${whole}" "  -- @settle\n" settle_at)
  if(mark_at EQUAL -1 OR settle_at EQUAL -1 OR settle_at LESS mark_at)
    message(FATAL_ERROR "lua/${name}.lua must have a '  -- @mark' line, then a '  -- @settle' line")
  endif()
  string(SUBSTRING "${whole}" 0 ${mark_at} script)
  math(EXPR mark_length "${settle_at} - ${mark_at}")
  string(SUBSTRING "${whole}" ${mark_at} ${mark_length} mark_block)
  string(SUBSTRING "${whole}" ${settle_at} -1 settle_block)
  string(REPLACE "  -- @algorithm\n" "${script}${write}" single "${batch}")
  if(single STREQUAL batch)
    message(FATAL_ERROR "lua/batch.lua has lost its '  -- @algorithm' line")
  endif()
  set(function "local function decide_${name}(key, limit, period, burst, limit_units, ")
  string(APPEND function "period_units, max_delay, reserved, cost, commit)\n  local allowed, ")
  string(APPEND function "remaining, ")
  string(APPEND function "retry_after, reset_after, state, idle_at\n  local delay = 0\n")
  string(APPEND function "${script}${write}")
  string(APPEND function "  return allowed, remaining, retry_after, reset_after, delay\nend\n")
  set(mark_function "local function mark_${name}(key, limit, period, burst, limit_units, ")
  string(APPEND mark_function
         "period_units)\n  local mark_at, mark_debt, mark_since = -1, 0, nil\n${mark_block}")
  string(APPEND mark_function "  return mark_at, mark_debt, mark_since\nend\n")
  set(settle_function "local function settle_${name}(key, limit, period, burst, limit_units, ")
  string(APPEND settle_function "period_units, max_delay, delta, mark_at, mark_debt, ")
  string(APPEND settle_function "mark_since)\n")
  string(APPEND settle_function "  local done, state, idle_at = 0\n${settle_block}${write}")
  string(APPEND settle_function "  return done\nend\n")
  string(APPEND checks
         "static_assert(algorithm_name(kAlgorithms[${index}]) == \"${name}\", \"${name} moved\");\n")
  string(APPEND scripts "    R\"spillway_lua(${prelude}${single})spillway_lua\",\n")
  string(APPEND every_algorithm "${function}")
  string(APPEND every_mark "${mark_function}")
  string(APPEND every_settle "${settle_function}")
  if(index GREATER 0)
    string(APPEND id_table ", ")
    string(APPEND mark_table ", ")
    string(APPEND settle_table ", ")
  endif()
  string(APPEND id_table "[${index}] = decide_${name}")
  string(APPEND mark_table "[${index}] = mark_${name}")
  string(APPEND settle_table "[${index}] = settle_${name}")
  math(EXPR index "${index} + 1")
endforeach()
string(APPEND id_table "}\n")
string(APPEND mark_table "}\n")
string(APPEND settle_table "}\n")

set(body "// Generated from lua/*.lua and include/spillway/algorithm_list.h by cmake/embed_lua.cmake.\n")
string(APPEND body "// Do not edit.\n#include \"src/redis/scripts.h\"\n\nnamespace spillway::redis {\n\n")
string(APPEND body "static_assert(kAlgorithmCount == ${index}, \"the build read another algorithm list\");\n")
string(APPEND body "${checks}\nnamespace {\n\n")
string(APPEND body "constexpr std::string_view kScripts[] = {\n${scripts}};\n\n}  // namespace\n\n")
string(APPEND body "std::string_view script_source(Algorithm algorithm) {\n")
string(APPEND body "  return kScripts[algorithm_index(algorithm)];\n}\n\n")
string(APPEND body "std::string_view all_or_nothing_script_source() {\n")
string(APPEND body "  return R\"spillway_lua(${prelude}${every_algorithm}${every_mark}${id_table}${mark_table}${all_or_nothing})spillway_lua\";\n}\n\n")
string(APPEND body "std::string_view settle_script_source() {\n")
string(APPEND body "  return R\"spillway_lua(${prelude}${every_algorithm}${every_settle}${id_table}${settle_table}${settle})spillway_lua\";\n}\n\n")
string(APPEND body "std::string_view refund_script_source() {\n")
string(APPEND body "  return R\"spillway_lua(${refund})spillway_lua\";\n}\n\n")
foreach(name IN ITEMS tenant_write tenant_read tenant_scan reset probe quota_share)
  file(READ ${LUA_DIR}/${name}.lua text)
  string(APPEND body "std::string_view ${name}_script_source() {\n")
  string(APPEND body "  return R\"spillway_lua(${text})spillway_lua\";\n}\n\n")
endforeach()
string(APPEND body "}  // namespace spillway::redis\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
