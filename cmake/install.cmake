# cmake --install: what a project that uses Ember needs, and nothing of the build tree.
#   include/ember/...            public headers (+ build_info.h with the installed paths)
#   lib/libember_*.a             the stage libraries (Ember::ember links them all)
#   lib/libember.so              the same code as one shared library (Ember::ember_shared)
#   lib/cmake/Ember/             EmberConfig.cmake, its version file and exported targets
#   lib/pkgconfig/ember.pc       for pkg-config users (shared library; --static for the .a files)
#   bin/ember                    the command-line tool
# The paths inside are relative to the prefix chosen at install time (--prefix).
include(CMakePackageConfigHelpers)

set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)

install(TARGETS ${EMBER_STAGE_LIBRARIES} ember ember_shared ember_sleef ember_blas ember_fftw
        EXPORT EmberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET ember_cli)
  install(TARGETS ember_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT EmberTargets NAMESPACE Ember:: DESTINATION ${EMBER_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/EmberConfig.cmake.in
  ${PROJECT_BINARY_DIR}/EmberConfig.cmake INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/EmberConfig.cmake ${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EmberDependencies.cmake
        DESTINATION ${EMBER_CMAKE_DIR})

# build_info.h and the .pc files name absolute paths under the prefix, known only at
# install time: configured here with @EMBER_PREFIX@ left in, filled in by install(CODE).
set(EMBER_PREFIX "@EMBER_PREFIX@")
set(EMBER_PC_STATIC_LIBS "")
foreach(lib ${EMBER_STAGE_LIBRARIES})
  string(APPEND EMBER_PC_STATIC_LIBS " -l${lib}")
endforeach()
set(EMBER_PC_DEPENDENCIES "${SLEEF_LIBRARY} ${OPENBLAS_LIBRARY} ${FFTWF_LIBRARY} ${FFTW_LIBRARY} ${DNNL_LIBRARY} ${LIBZIP_LINK_LIBRARIES} ${OpenMP_CXX_FLAGS} -lpthread -ldl")
if(EMBER_CUDA)
  set(EMBER_PC_DEPENDENCIES "${CUDA_cudart_static_LIBRARY} ${EMBER_PC_DEPENDENCIES} -lrt")
endif()
set(installed_files "")
foreach(pc ember ember-static)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc.in @ONLY)
  string(APPEND installed_files "${PROJECT_BINARY_DIR}/${pc}.pc.in|${CMAKE_INSTALL_LIBDIR}/pkgconfig/${pc}.pc;")
endforeach()
string(APPEND installed_files "${PROJECT_BINARY_DIR}/src/installed_build_info.h|${CMAKE_INSTALL_INCLUDEDIR}/ember/build_info.h")
install(CODE "
  set(EMBER_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  foreach(pair ${installed_files})
    string(REPLACE \"|\" \";\" pair \"\${pair}\")
    list(GET pair 0 from)
    list(GET pair 1 to)
    message(STATUS \"Installing: \${CMAKE_INSTALL_PREFIX}/\${to}\")
    configure_file(\"\${from}\" \"\${CMAKE_INSTALL_PREFIX}/\${to}\" @ONLY)
  endforeach()
")
