# Configures tests/install/subdirectory (a program that add_subdirectory()s spillway with
# SPILLWAY_LIBRARY_ONLY) with gRPC, protobuf and yaml-cpp made unfindable, builds it and runs it:
# proof that the library builds alone, with neither gRPC nor npm (uPlot). Run by ctest
# install_library_only_subdirectory.
set(build ${BINARY_DIR}/test-library-only)
file(REMOVE_RECURSE ${build})
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/subdirectory -B ${build}
                        -G ${GENERATOR} -DSPILLWAY_SOURCE=${SOURCE_DIR}
                        -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}"
                        "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}"
                        -DCMAKE_DISABLE_FIND_PACKAGE_gRPC=ON
                        -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON
                        -DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "configuring the library alone failed:\n${out}\n${err}")
endif()
# Nothing of the server is in the build: no target of a layer above policy, no uPlot file.
file(READ ${build}/build.ninja ninja)
foreach(absent IN ITEMS spillway_server spillway_grpc spillway_config spillway_cli uplot)
  string(FIND "${ninja}" "${absent}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the library-only build still builds or reads ${absent}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} --parallel 2 RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the library alone failed: ${rc}")
endif()
execute_process(COMMAND ${build}/subdirectory_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(rc OR NOT out MATCHES "admitted 5 of 8" OR
   NOT out MATCHES "policy admitted 3 of 5, denied by ip, key remaining 7")
  message(FATAL_ERROR "the program built on the library alone printed: ${out} (exit ${rc})")
endif()
