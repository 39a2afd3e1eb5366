# Run by cpack after it has staged the package's files, before it packs them
# (CPACK_PRE_BUILD_SCRIPTS, set in cmake/package.cmake). CPACK_STRIP_FILES strips executables
# only; this strips the debug information from the static libraries too, as Debian's dh_strip
# does (in a RelWithDebInfo tree it is ~90% of their size). Symbols stay: they are libraries.
if(NOT CPACK_TEMPORARY_INSTALL_DIRECTORY OR NOT IS_DIRECTORY "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
  message(FATAL_ERROR "cpack_strip_archives: no staging directory "
                      "(CPACK_TEMPORARY_INSTALL_DIRECTORY='${CPACK_TEMPORARY_INSTALL_DIRECTORY}')")
endif()
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND "${CPACK_SPILLWAY_STRIP}" --strip-debug --enable-deterministic-archives
                          "${archive}"
                  RESULT_VARIABLE rc ERROR_VARIABLE error)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cpack_strip_archives: ${CPACK_SPILLWAY_STRIP} ${archive}: ${error}")
  endif()
endforeach()
