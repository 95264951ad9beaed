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

# oneDNN by header and library: Debian's dnnl-config.cmake also demands OpenCL's
# development files (its GPU runtime), which the CPU build never uses.
find_path(DNNL_INCLUDE_DIR dnnl.h REQUIRED)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
add_library(DNNL::dnnl SHARED IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY})
target_include_directories(DNNL::dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
