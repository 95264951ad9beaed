# The third-party libraries Ember links, found the same way for Ember's own build
# (cmake/dependencies.cmake) and for a project that uses the installed package.
include(CMakeFindDependencyMacro)
find_dependency(OpenMP)
# libzip, for the .pt2 archives of programs exported by PyTorch (ember_export).
find_dependency(PkgConfig)
if(NOT TARGET PkgConfig::LIBZIP)
  pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
endif()
# The static CUDA runtime the cuda device links (EMBER_CUDA builds).
if(EMBER_CUDA)
  find_dependency(CUDAToolkit)
endif()

# oneDNN by header and library: Debian's dnnl-config.cmake also demands OpenCL's
# development files (its GPU runtime), which the CPU build never uses.
if(NOT TARGET DNNL::dnnl)
  find_path(DNNL_INCLUDE_DIR dnnl.h REQUIRED)
  find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
  add_library(DNNL::dnnl SHARED IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY})
  target_include_directories(DNNL::dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
endif()
