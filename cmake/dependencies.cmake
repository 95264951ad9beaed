# Third-party libraries, all from Debian packages (scripts/install-deps.sh).
find_package(OpenMP REQUIRED)
find_package(nlohmann_json REQUIRED)

find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu/openblas-openmp x86_64-linux-gnu/openblas-pthread REQUIRED)
find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
add_library(ember_blas INTERFACE)
target_include_directories(ember_blas SYSTEM INTERFACE ${CBLAS_INCLUDE_DIR})
target_link_libraries(ember_blas INTERFACE ${OPENBLAS_LIBRARY})

find_path(SLEEF_INCLUDE_DIR sleef.h PATH_SUFFIXES x86_64-linux-gnu REQUIRED)
find_library(SLEEF_LIBRARY NAMES sleef REQUIRED)
add_library(ember_sleef INTERFACE)
target_include_directories(ember_sleef SYSTEM INTERFACE ${SLEEF_INCLUDE_DIR})
target_link_libraries(ember_sleef INTERFACE ${SLEEF_LIBRARY})

# oneDNN (and OpenMP's target): found as the installed package's users find them.
include(${CMAKE_CURRENT_LIST_DIR}/EmberDependencies.cmake)
