# Generates OUTPUT (a .cc file) holding each Lua script as a string: prelude + algorithm +
# epilogue, so each compiled-in script is complete and atomic on its own.
file(READ ${LUA_DIR}/prelude.lua prelude)
file(READ ${LUA_DIR}/epilogue.lua epilogue)
set(body "// Generated from lua/*.lua by cmake/embed_lua.cmake. Do not edit.\n")
string(APPEND body "#include \"src/redis/scripts.h\"\n\nnamespace spillway::redis {\n\n")
string(APPEND body "std::string_view script_source(Algorithm algorithm) {\n  switch (algorithm) {\n")
foreach(pair "kFixedWindow=fixed_window" "kSlidingLog=sliding_log" "kSlidingWindow=sliding_window"
             "kTokenBucket=token_bucket" "kGcra=gcra")
  string(REPLACE "=" ";" parts ${pair})
  list(GET parts 0 enumerator)
  list(GET parts 1 name)
  file(READ ${LUA_DIR}/${name}.lua script)
  string(APPEND body "    case Algorithm::${enumerator}:\n      return R\"spillway_lua(${prelude}${script}${epilogue})spillway_lua\";\n")
endforeach()
string(APPEND body "  }\n  return {};\n}\n\n}  // namespace spillway::redis\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
