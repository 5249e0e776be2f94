# The BLAS behind CPU matmul (see Note [CPU GEMM library] in ops/linalg.cpp).
#   STRATA_BLAS=AUTO      OpenBLAS when it is installed (Debian: libopenblas-openmp-dev), else
#                         Eigen alone, with a message;
#   STRATA_BLAS=OpenBLAS  OpenBLAS, or a configure error;
#   STRATA_BLAS=OFF       Eigen alone.
# BLIS was measured too (bench/bench_gemm.cpp) and was the slowest of the three here, so it is
# not offered. The OpenMP build of OpenBLAS is looked for first: it shares libgomp, the thread
# pool strata's parallel_for runs on. OpenBLAS is a PRIVATE dependency of ops/ alone: the target
# strata_openblas carries its include directory and the STRATA_WITH_OPENBLAS definition.
set(STRATA_BLAS "AUTO" CACHE STRING "BLAS for CPU matmul: AUTO | OpenBLAS | OFF (Eigen only)")
set_property(CACHE STRATA_BLAS PROPERTY STRINGS AUTO OpenBLAS OFF)
string(TOUPPER "${STRATA_BLAS}" strata_blas_choice)
if(NOT strata_blas_choice MATCHES "^(AUTO|OPENBLAS|OFF)$")
  message(FATAL_ERROR "STRATA_BLAS must be AUTO, OpenBLAS or OFF, got '${STRATA_BLAS}'")
endif()

set(STRATA_BLAS_LIBS)
if(NOT strata_blas_choice STREQUAL "OFF")
  # Debian puts each OpenBLAS build in a folder of its own under the multiarch directories.
  find_path(STRATA_OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-openmp openblas)
  find_library(STRATA_OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-openmp openblas)
  if(STRATA_OPENBLAS_INCLUDE_DIR AND STRATA_OPENBLAS_LIBRARY AND EXISTS ${STRATA_OPENBLAS_INCLUDE_DIR}/openblas_config.h)
    add_library(strata_openblas UNKNOWN IMPORTED)
    set_target_properties(strata_openblas PROPERTIES
      IMPORTED_LOCATION ${STRATA_OPENBLAS_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${STRATA_OPENBLAS_INCLUDE_DIR}
      INTERFACE_COMPILE_DEFINITIONS STRATA_WITH_OPENBLAS)
    set(STRATA_BLAS_LIBS strata_openblas)
    message(STATUS "strata: CPU matmul through OpenBLAS (${STRATA_OPENBLAS_LIBRARY})")
  elseif(strata_blas_choice STREQUAL "OPENBLAS")
    message(FATAL_ERROR "STRATA_BLAS=OpenBLAS but OpenBLAS was not found (Debian: apt-get install libopenblas-openmp-dev)")
  else()
    message(STATUS "strata: OpenBLAS not found; CPU matmul through Eigen (apt-get install libopenblas-openmp-dev for OpenBLAS)")
  endif()
else()
  message(STATUS "strata: STRATA_BLAS=OFF; CPU matmul through Eigen")
endif()
