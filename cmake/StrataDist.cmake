# Note [The dist library]
# dist/ is a library of its own, strata_dist, above nn/ and using only the public API (see
# DESIGN.md): the core library never links MPI, so a build without MPI, or a program that
# does not train in parallel, is unchanged. strata_dist defines STRATA_WITH_DIST for whatever
# links it, and strata.h then includes <strata/dist/dist.h>. MPI stays out of dist's headers.
file(GLOB strata_dist_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/dist/*.cpp)
# CUDA tensors go over NCCL (dist/nccl.cpp, Note [NCCL collectives]) when the CUDA backend is
# built and NCCL is found (the CUDA toolkit here ships it).
set(STRATA_DIST_WITH_NCCL OFF)
if(STRATA_WITH_CUDA)
  find_path(STRATA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(STRATA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(STRATA_NCCL_INCLUDE_DIR AND STRATA_NCCL_LIBRARY)
    set(STRATA_DIST_WITH_NCCL ON)
    message(STATUS "strata: dist collectives on CUDA tensors through NCCL (${STRATA_NCCL_LIBRARY})")
  endif()
endif()
if(NOT STRATA_DIST_WITH_NCCL)
  list(REMOVE_ITEM strata_dist_sources ${CMAKE_SOURCE_DIR}/dist/nccl.cpp)
endif()
add_library(strata_dist SHARED ${strata_dist_sources})
add_library(strata::dist ALIAS strata_dist)
target_include_directories(strata_dist PUBLIC
  $<BUILD_INTERFACE:${STRATA_BUILD_INCLUDE}>
  $<INSTALL_INTERFACE:include>)
target_link_libraries(strata_dist PUBLIC strata PRIVATE $<BUILD_INTERFACE:strata_flags> MPI::MPI_CXX)
target_compile_options(strata_dist PRIVATE -Wall -Wextra)
target_compile_definitions(strata_dist PUBLIC STRATA_WITH_DIST)
set_target_properties(strata_dist PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0 EXPORT_NAME dist)
if(STRATA_DIST_WITH_NCCL)
  target_include_directories(strata_dist PRIVATE ${STRATA_NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(strata_dist PRIVATE ${STRATA_NCCL_LIBRARY})
  target_compile_definitions(strata_dist PRIVATE STRATA_DIST_WITH_NCCL)
endif()
set(STRATA_DIST_TARGETS strata_dist)
list(APPEND STRATA_HEADER_DIRS dist)

# Tests of dist/ run as ranks of one MPI job (tests/dist/): mpirun and the flags it needs here.
# Open MPI refuses to run as root unless told (CI machines run as root), and its shared-memory
# transport's single-copy mode (process_vm_readv) fails in containers that forbid ptrace: the
# tests' messages are small, so they copy through shared memory instead.
find_program(STRATA_MPIEXEC NAMES ${MPIEXEC_EXECUTABLE} mpiexec mpirun)
set(STRATA_MPI_ENVIRONMENT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_btl_vader_single_copy_mechanism=none)
