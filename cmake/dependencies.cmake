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

# FFTW3 (libfftw3-dev): the CPU kernels of _fft_r2c, _fft_c2r and _fft_c2c, fftw3f for
# complex64 and fftw3 for complex128 (kernels/cpu/fft.cpp).
find_path(FFTW_INCLUDE_DIR fftw3.h REQUIRED)
find_library(FFTW_LIBRARY NAMES fftw3 REQUIRED)
find_library(FFTWF_LIBRARY NAMES fftw3f REQUIRED)
add_library(ember_fftw INTERFACE)
target_include_directories(ember_fftw SYSTEM INTERFACE ${FFTW_INCLUDE_DIR})
target_link_libraries(ember_fftw INTERFACE ${FFTWF_LIBRARY} ${FFTW_LIBRARY})

# oneDNN (and OpenMP's target): found as the installed package's users find them.
include(${CMAKE_CURRENT_LIST_DIR}/EmberDependencies.cmake)
