# Generates OUTPUT (a .cc file) holding the Redis scripts as strings, one per algorithm of the list
# (include/spillway/algorithm_list.h, read as LIST_FILE) and the all-or-nothing script:
#   script of algorithm a:  prelude.lua + batch.lua with <a>.lua (a block of statements) and
#                           write.lua pasted in place of its "-- @algorithm" line: no function
#                           per check
#   all-or-nothing script:  prelude.lua + every <a>.lua + write.lua wrapped in
#                           "local function decide_<a>"
#                           + the id table + all_or_nothing.lua
#   refund script:          refund.lua (undoes a reservation of the all-or-nothing script)
#   standalone scripts:     tenant_write.lua, tenant_read.lua, tenant_scan.lua, reset.lua as they are
# The id table maps each algorithm's number (its position in the list, as the C++ sends it) to
# its decide function; static_asserts in the output check that the C++ list says the same.
include(${CMAKE_CURRENT_LIST_DIR}/algorithm_list.cmake)
spillway_read_algorithm_list(${LIST_FILE} algorithms)

file(READ ${LUA_DIR}/prelude.lua prelude)
file(READ ${LUA_DIR}/batch.lua batch)
file(READ ${LUA_DIR}/write.lua write)
file(READ ${LUA_DIR}/all_or_nothing.lua all_or_nothing)
file(READ ${LUA_DIR}/refund.lua refund)

set(checks "")
set(scripts "")
set(every_algorithm "")
set(id_table "local decide_by_id = {")
set(index 0)
foreach(name IN LISTS algorithms)
  if(NOT EXISTS ${LUA_DIR}/${name}.lua)
    message(FATAL_ERROR "algorithm ${name} has no script: lua/${name}.lua is missing")
  endif()
  file(READ ${LUA_DIR}/${name}.lua script)
  if(NOT script MATCHES "^  -- ${name}: ")
    message(FATAL_ERROR "lua/${name}.lua must be a block that starts with '  -- ${name}: '")
  endif()
  string(REPLACE "  -- @algorithm\n" "${script}${write}" single "${batch}")
  if(single STREQUAL batch)
    message(FATAL_ERROR "lua/batch.lua has lost its '  -- @algorithm' line")
  endif()
  set(function "local function decide_${name}(key, limit, period, burst, limit_units, ")
  string(APPEND function "period_units, cost, commit)\n  local allowed, remaining, retry_after, ")
  string(APPEND function "reset_after, state, idle_at\n${script}${write}")
  string(APPEND function "  return allowed, remaining, retry_after, reset_after\nend\n")
  string(APPEND checks
         "static_assert(algorithm_name(kAlgorithms[${index}]) == \"${name}\", \"${name} moved\");\n")
  string(APPEND scripts "    R\"spillway_lua(${prelude}${single})spillway_lua\",\n")
  string(APPEND every_algorithm "${function}")
  if(index GREATER 0)
    string(APPEND id_table ", ")
  endif()
  string(APPEND id_table "[${index}] = decide_${name}")
  math(EXPR index "${index} + 1")
endforeach()
string(APPEND id_table "}\n")

set(body "// Generated from lua/*.lua and include/spillway/algorithm_list.h by cmake/embed_lua.cmake.\n")
string(APPEND body "// Do not edit.\n#include \"src/redis/scripts.h\"\n\nnamespace spillway::redis {\n\n")
string(APPEND body "static_assert(kAlgorithmCount == ${index}, \"the build read another algorithm list\");\n")
string(APPEND body "${checks}\nnamespace {\n\n")
string(APPEND body "constexpr std::string_view kScripts[] = {\n${scripts}};\n\n}  // namespace\n\n")
string(APPEND body "std::string_view script_source(Algorithm algorithm) {\n")
string(APPEND body "  return kScripts[algorithm_index(algorithm)];\n}\n\n")
string(APPEND body "std::string_view all_or_nothing_script_source() {\n")
string(APPEND body "  return R\"spillway_lua(${prelude}${every_algorithm}${id_table}${all_or_nothing})spillway_lua\";\n}\n\n")
string(APPEND body "std::string_view refund_script_source() {\n")
string(APPEND body "  return R\"spillway_lua(${refund})spillway_lua\";\n}\n\n")
foreach(name IN ITEMS tenant_write tenant_read tenant_scan reset)
  file(READ ${LUA_DIR}/${name}.lua text)
  string(APPEND body "std::string_view ${name}_script_source() {\n")
  string(APPEND body "  return R\"spillway_lua(${text})spillway_lua\";\n}\n\n")
endforeach()
string(APPEND body "}  // namespace spillway::redis\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
