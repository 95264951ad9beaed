# ctest script: installs the Ember build into a scratch prefix, builds tests/consumer
# against it with find_package (static and shared) and with pkg-config, runs each with a
# fresh kernel cache, and checks that the generated code was compiled without Ember's
# source or build tree. Also configures a parent project that add_subdirectory()s Ember
# and checks that its build type and flags are left alone.
# Variables: EMBER_SOURCE_DIR, EMBER_BUILD_DIR, WORK_DIR, CXX.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

# Runs a consumer binary with a fresh kernel cache and checks its result and the compile
# command the inductor logged.
function(check_consumer exe)
  file(REMOVE_RECURSE ${WORK_DIR}/cache)
  run(${CMAKE_COMMAND} -E env TORCHINDUCTOR_CACHE_DIR=${WORK_DIR}/cache TORCH_LOGS=+inductor ${ARGN} ${exe})
  if(NOT out MATCHES "consumer: compiled equals eager")
    message(FATAL_ERROR "${exe}: no success line:\n${out}")
  endif()
  string(REGEX MATCH "compiling generated code: [^\n]*" cmd "${out}")
  if(cmd STREQUAL "")
    message(FATAL_ERROR "${exe}: the inductor compiled nothing (no 'compiling generated code' line):\n${out}")
  endif()
  # The build tree's precompiled prelude is the one exception: an optional speed-up, used
  # only while its header holds the library's prelude (Note [inductor], "The precompiled
  # prelude"); without the build tree each unit parses the prelude's text.
  string(REGEX REPLACE " -Winvalid-pch -I'[^']*inductor_pch'" "" cmd "${cmd}")
  foreach(tree ${EMBER_SOURCE_DIR}/src ${EMBER_SOURCE_DIR}/include ${EMBER_BUILD_DIR}/src ${EMBER_BUILD_DIR}/generated)
    string(FIND "${cmd}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${exe}: generated code compiled against ${tree}:\n${cmd}")
    endif()
  endforeach()
  message(STATUS "${exe}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${EMBER_BUILD_DIR} --prefix ${prefix})
foreach(f include/ember/ember.h include/ember/build_info.h lib/libember.so lib/libember_core.a
          lib/cmake/Ember/EmberConfig.cmake lib/pkgconfig/ember.pc bin/ember)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
file(READ ${prefix}/include/ember/build_info.h build_info)
if(build_info MATCHES "${EMBER_BUILD_DIR}/src|${EMBER_BUILD_DIR}/generated|@EMBER_PREFIX@")
  message(FATAL_ERROR "installed build_info.h names the build tree or an unfilled prefix:\n${build_info}")
endif()

# find_package(Ember): static and shared.
run(${CMAKE_COMMAND} -S ${EMBER_SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
check_consumer(${WORK_DIR}/build/consumer_static)
check_consumer(${WORK_DIR}/build/consumer_shared)

# pkg-config, shared library.
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig pkg-config --cflags --libs ember)
string(STRIP "${out}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} ${EMBER_SOURCE_DIR}/tests/consumer/main.cpp -o ${WORK_DIR}/consumer_pkgconfig ${pc_flags})
check_consumer(${WORK_DIR}/consumer_pkgconfig LD_LIBRARY_PATH=${prefix}/lib)

# add_subdirectory(ember) in a parent without a build type: configure only.
file(MAKE_DIRECTORY ${WORK_DIR}/parent)
file(WRITE ${WORK_DIR}/parent/CMakeLists.txt "
cmake_minimum_required(VERSION 3.25)
project(parent LANGUAGES CXX)
set(flags_before \"\${CMAKE_CXX_FLAGS}\")
add_subdirectory(${EMBER_SOURCE_DIR} ember)
if(NOT \"\${CMAKE_BUILD_TYPE}\" STREQUAL \"\")
  message(FATAL_ERROR \"Ember changed the parent's build type to '\${CMAKE_BUILD_TYPE}'\")
endif()
if(NOT \"\${CMAKE_CXX_FLAGS}\" STREQUAL \"\${flags_before}\")
  message(FATAL_ERROR \"Ember changed the parent's CMAKE_CXX_FLAGS\")
endif()
if(TARGET test_core OR TARGET ember_demo)
  message(FATAL_ERROR \"Ember added its tests or examples to the parent's build\")
endif()
add_executable(app ${EMBER_SOURCE_DIR}/tests/consumer/main.cpp)
target_link_libraries(app PRIVATE ember)
")
run(${CMAKE_COMMAND} -S ${WORK_DIR}/parent -B ${WORK_DIR}/parent/build -G Ninja -DCMAKE_CXX_FLAGS=-DPARENT_FLAG
    -DCMAKE_CXX_COMPILER=${CXX})
message(STATUS "add_subdirectory: parent's build type and flags unchanged")
