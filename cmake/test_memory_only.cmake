# A program that uses only the in-process store and layered policies (examples/embed_memory,
# linked to spillway::memory and spillway::policy) links neither hiredis nor OpenSSL's libssl;
# libcrypto is allowed (digested key names use it). The program is built three ways, each binary
# is run (it checks its own decisions and exits non-zero on a wrong one), and each binary's NEEDED
# entries are read with `readelf -d`:
#   1. find_package(spillway) against a copy installed into a scratch prefix;
#   2. without CMake, from the installed spillway-memory.pc;
#   3. with add_subdirectory and SPILLWAY_LIBRARY_ONLY (tests/install/memory_only), building that
#      one target only: the Redis backend and open_store are not even compiled. Plain builds only,
#      as install_library_only_subdirectory: it compiles part of the library again.
# Every link is made with -Wl,--no-as-needed, so that NEEDED lists every shared library the link
# named (Debian's GCC passes --as-needed, which drops an unused -lhiredis and would hide it). The
# same program linked from spillway.pc (the whole library) must need libhiredis and libssl: proof
# that the check sees them when a link names them. Run by ctest install_memory_only.
set(work ${BINARY_DIR}/test-memory-only)
set(prefix ${work}/prefix)
file(REMOVE_RECURSE ${work})
find_program(READELF readelf REQUIRED)
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()
set(link_flags "-Wl,--no-as-needed ${flags}")

# The file names `readelf -d` lists as NEEDED by `binary`, in `out`.
function(needed_of binary out)
  execute_process(COMMAND ${READELF} -d ${binary} RESULT_VARIABLE rc OUTPUT_VARIABLE text
                  ERROR_VARIABLE error)
  if(rc)
    message(FATAL_ERROR "readelf -d ${binary} failed: ${error}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*\\[(.*)\\].*" "\\1" name "${line}")
    list(APPEND names ${name})
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "readelf -d ${binary} lists no NEEDED entry: nothing to check")
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# Configures the CMake project in `source` into `build` with the extra arguments after the two,
# then builds `target` there; fails naming the step.
function(configure_and_build source build target)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${build} -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_EXE_LINKER_FLAGS=${link_flags}"
                          ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE error)
  if(rc)
    message(FATAL_ERROR "configuring ${source} failed:\n${out}\n${error}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} --target ${target} --parallel 2
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "building ${target} from ${source} failed: ${rc}")
  endif()
endfunction()

# Runs the program built `how`, then fails if it needs hiredis or libssl.
function(check_memory_only binary how)
  execute_process(COMMAND ${binary} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE error)
  message(STATUS "${how}: ${out}${error}")
  if(rc OR NOT out MATCHES "admitted 10 of 11")
    message(FATAL_ERROR "the memory-only program built ${how} failed (exit ${rc}):\n${out}${error}")
  endif()
  needed_of(${binary} needed)
  message(STATUS "${how}: NEEDED ${needed}")
  foreach(name IN LISTS needed)
    if(name MATCHES "^libhiredis" OR name MATCHES "^libssl\\.")
      message(FATAL_ERROR "the memory-only program built ${how} needs ${name} (NEEDED: "
                          "${needed}): a program on spillway::memory and spillway::policy must "
                          "link neither hiredis nor OpenSSL's libssl")
    endif()
  endforeach()
endfunction()

# 1. Installed, find_package.
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
configure_and_build(${SOURCE_DIR}/examples/embed_memory ${work}/find_package embed_memory_example
                    -DCMAKE_PREFIX_PATH=${prefix} "-DCMAKE_CXX_FLAGS=${flags}")
check_memory_only(${work}/find_package/embed_memory_example "with find_package")

# 2. Installed, pkg-config: spillway-memory.pc; then spillway.pc, which must show what is checked.
file(GLOB_RECURSE pc_files ${prefix}/*/pkgconfig/spillway-memory.pc)
if(NOT pc_files)
  message(FATAL_ERROR "the install holds no LIBDIR/pkgconfig/spillway-memory.pc")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
separate_arguments(link_args UNIX_COMMAND "${link_flags}")
foreach(package IN ITEMS spillway-memory spillway)
  execute_process(COMMAND pkg-config --cflags --libs ${package} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE pc_flags ERROR_VARIABLE error OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc)
    message(FATAL_ERROR "pkg-config --cflags --libs ${package} failed: ${error}")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  set(program ${work}/embed_memory_${package})
  execute_process(COMMAND ${CXX} -std=c++23 ${link_args} ${SOURCE_DIR}/examples/embed_memory/main.cc
                          -o ${program} ${pc_flags}
                  RESULT_VARIABLE rc ERROR_VARIABLE error)
  if(rc)
    message(FATAL_ERROR "building examples/embed_memory with ${package}.pc (${pc_flags}) failed:\n"
                        "${error}")
  endif()
endforeach()
check_memory_only(${work}/embed_memory_spillway-memory "with spillway-memory.pc")
needed_of(${work}/embed_memory_spillway needed)
if(NOT needed MATCHES "(^|;)libhiredis" OR NOT needed MATCHES "(^|;)libssl\\.")
  message(FATAL_ERROR "the same program linked from spillway.pc (hiredis and libssl named) "
                      "needs only ${needed}: this check could not see them")
endif()

# 3. add_subdirectory, the one target.
if(NOT SANITIZE)
  set(build ${work}/subdirectory)
  configure_and_build(${SOURCE_DIR}/tests/install/memory_only ${build} memory_only_consumer
                      -DSPILLWAY_SOURCE=${SOURCE_DIR} "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
  if(NOT EXISTS ${build}/spillway/src/libspillway_memory.a)
    message(FATAL_ERROR "no ${build}/spillway/src/libspillway_memory.a: the libraries moved?")
  endif()
  foreach(absent IN ITEMS libspillway_redis.a libspillway.a)
    if(EXISTS ${build}/spillway/src/${absent})
      message(FATAL_ERROR "building memory_only_consumer built ${absent} too")
    endif()
  endforeach()
  check_memory_only(${build}/memory_only_consumer "with add_subdirectory")
endif()
