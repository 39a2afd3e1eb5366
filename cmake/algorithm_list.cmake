# Reads the one list of algorithms (include/spillway/algorithm_list.h) for the build: sets `out`
# to the algorithms' names in list order. A line that starts like an entry but is not of the form
# `X(kEnumerator, name, true|false)` is an error, so the build and the C++ never disagree silently.
function(spillway_read_algorithm_list list_file out)
  file(READ ${list_file} text)
  string(REPLACE "\\" "" text "${text}")  # the macro's line continuations
  string(REGEX MATCHALL "\n[ ]*X\\([^\n]*" entries "${text}")
  set(names "")
  foreach(entry IN LISTS entries)
    if(NOT entry MATCHES "^\n[ ]*X\\((k[A-Za-z0-9]+), ([a-z][a-z0-9_]*), (true|false)\\)[ ]*$")
      message(FATAL_ERROR "${list_file}: cannot read the algorithm entry \"${entry}\"")
    endif()
    list(APPEND names ${CMAKE_MATCH_2})
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${list_file}: no algorithm entries found")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()
