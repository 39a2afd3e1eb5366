# Installs the build tree into a scratch prefix, then configures, builds and runs
# examples/embed against it with find_package(spillway CONFIG): proof that the export works.
set(prefix ${BINARY_DIR}/test-install/prefix)
set(example_build ${BINARY_DIR}/test-install/example)
file(REMOVE_RECURSE ${BINARY_DIR}/test-install)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
# The installed package exposes include/ only: no exported target names a directory of the source
# or build tree (a dependent of the installed package could reach private src/ headers through
# it), and no public header includes a private one.
file(GLOB_RECURSE exports ${prefix}/*/cmake/spillway/*.cmake)
if(NOT exports)
  message(FATAL_ERROR "the install holds no CMake package files under ${prefix}")
endif()
foreach(export IN LISTS exports)
  file(READ ${export} text)
  foreach(tree IN ITEMS ${SOURCE_DIR} ${BINARY_DIR})
    string(FIND "${text}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${export} names ${tree}: the installed package must expose only its "
                          "include directory")
    endif()
  endforeach()
endforeach()
file(GLOB_RECURSE headers ${prefix}/include/*)
foreach(header IN LISTS headers)
  file(STRINGS ${header} private_includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]src/")
  if(private_includes)
    message(FATAL_ERROR "${header} includes a private header: ${private_includes}")
  endif()
endforeach()
# A sanitizer build installs an instrumented library: the example must link the same runtime.
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${example_build}
                        -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} "-DCMAKE_CXX_FLAGS=${flags}"
                        "-DCMAKE_EXE_LINKER_FLAGS=${flags}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the example failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${example_build} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the example failed: ${rc}")
endif()
execute_process(COMMAND ${example_build}/embed_example RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(rc)
  message(FATAL_ERROR "the example failed: ${rc}")
endif()
if(NOT out MATCHES "admitted 5 of 8" OR
   NOT out MATCHES "policy admitted 3 of 5, denied by ip, key remaining 7")
  message(FATAL_ERROR "the example printed an unexpected result")
endif()
# The same program built without CMake, from the installed pkg-config file (spillway.pc) and
# -std=c++23: what a Makefile or Meson build of an embedding program does.
file(GLOB_RECURSE pc_files ${prefix}/*/pkgconfig/spillway.pc)
if(NOT pc_files)
  message(FATAL_ERROR "the install holds no pkg-config file (LIBDIR/pkgconfig/spillway.pc)")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND pkg-config --cflags --libs spillway RESULT_VARIABLE rc
                OUTPUT_VARIABLE pc_flags ERROR_VARIABLE pc_error OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc)
  message(FATAL_ERROR "pkg-config --cflags --libs spillway failed: ${pc_error}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
set(pc_program ${BINARY_DIR}/test-install/embed_example_pkg_config)
execute_process(COMMAND ${CXX} -std=c++23 ${flags} ${SOURCE_DIR}/examples/embed/main.cc
                        -o ${pc_program} ${pc_flags}
                RESULT_VARIABLE rc ERROR_VARIABLE pc_error)
if(rc)
  message(FATAL_ERROR "building the example with pkg-config's flags (${pc_flags}) failed:\n"
                      "${pc_error}")
endif()
execute_process(COMMAND ${pc_program} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "policy admitted 3 of 5, denied by ip, key remaining 7")
  message(FATAL_ERROR "the example built with pkg-config printed: ${out} (exit ${rc})")
endif()
