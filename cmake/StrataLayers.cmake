# Note [Layers]
# strata's folders are layers, each allowed to use only the ones below it:
#   tensor <- dispatch <- autograd <- ops <- nn <- jit
# Each folder builds as its own OBJECT library (strata_tensor, strata_dispatch, ...) and the
# shared library `strata` is made of their objects. A layer compiles against an include root
# of its own that holds only the folders it may see (build/include/layers/<layer>/strata/<folder>
# links to the source folder), so `#include <strata/ops/ops.h>` in tensor/ fails with "No such
# file or directory". Three more checks close what include roots alone leave open:
# - autograd's .cpp files may call ops through the public op header (ops/ops.h) and nothing
#   else of ops/: their root adds a strata/ops/ folder holding only STRATA_OPS_PUBLIC_HEADERS;
# - every header of tensor/, dispatch/, autograd/ and ops/ is compiled alone against its own
#   layer's root (strata_header_check_<layer>, built with the tests), so a header may not include a higher layer even where
#   no .cpp of its layer includes it (autograd's headers never see ops/ at all);
# - declarations can live below their definitions (Tensor methods are declared in
#   tensor/tensor.h and defined in ops/ and autograd/), so the bottom layers are also linked
#   alone with --no-undefined (strata_link_check_tensor, strata_link_check_dispatch): a call
#   from tensor/ into ops/ or autograd/ is an undefined reference there.
# The layering_* ctests (tests/CMakeLists.txt) build deliberately wrong includes and a wrong
# call and expect each build to fail. The public include root build/include/strata (the whole
# source tree) is for code outside the layers: tests, samples, bench and users.

set(STRATA_LAYERS tensor dispatch autograd ops nn jit)
# The headers of ops/ that autograd's .cpp files may include: the public op API and whatever
# of ops/ it includes.
set(STRATA_OPS_PUBLIC_HEADERS ops.h)
set(STRATA_LAYER_ROOTS ${STRATA_BUILD_INCLUDE}/layers)

# A folder root/strata/ holding links to the given source folders.
function(strata_make_include_root root)
  file(MAKE_DIRECTORY ${root}/strata)
  foreach(folder ${ARGN})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${folder} ${root}/strata/${folder} SYMBOLIC)
  endforeach()
endfunction()

set(visible)
foreach(layer ${STRATA_LAYERS})
  list(APPEND visible ${layer})
  strata_make_include_root(${STRATA_LAYER_ROOTS}/${layer} ${visible})
endforeach()
# autograd's .cpp files: autograd's root plus the public op headers.
set(STRATA_AUTOGRAD_OPS_ROOT ${STRATA_LAYER_ROOTS}/autograd_ops_api)
file(MAKE_DIRECTORY ${STRATA_AUTOGRAD_OPS_ROOT}/strata/ops)
foreach(header ${STRATA_OPS_PUBLIC_HEADERS})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/ops/${header} ${STRATA_AUTOGRAD_OPS_ROOT}/strata/ops/${header} SYMBOLIC)
endforeach()

# What every layer's objects compile with: the options the single library had.
function(strata_layer_settings target layer)
  target_include_directories(${target} PRIVATE ${STRATA_LAYER_ROOTS}/${layer})
  target_link_libraries(${target} PRIVATE strata_flags Threads::Threads)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # See Note [Binding calls inside libstrata] in CMakeLists.txt.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
  endif()
  # GCC 12 reports false positives inside libstdc++'s string copies (-Wrestrict, GCC bug 105329).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
endfunction()

# The libraries each layer uses beyond the C++ runtime.
set(STRATA_LAYER_LIBS_tensor OpenMP::OpenMP_CXX)
set(STRATA_LAYER_LIBS_dispatch ${CMAKE_DL_LIBS})
set(STRATA_LAYER_LIBS_autograd)
set(STRATA_LAYER_LIBS_ops Eigen3::Eigen OpenMP::OpenMP_CXX ${STRATA_BLAS_LIBS})
set(STRATA_LAYER_LIBS_nn ZLIB::ZLIB)
set(STRATA_LAYER_LIBS_jit Eigen3::Eigen OpenMP::OpenMP_CXX)

set(STRATA_LAYER_OBJECTS)
foreach(layer ${STRATA_LAYERS})
  file(GLOB layer_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${layer}/*.cpp)
  add_library(strata_${layer} OBJECT ${layer_sources})
  strata_layer_settings(strata_${layer} ${layer})
  target_link_libraries(strata_${layer} PRIVATE ${STRATA_LAYER_LIBS_${layer}})
  list(APPEND STRATA_LAYER_OBJECTS $<TARGET_OBJECTS:strata_${layer}>)
endforeach()
target_include_directories(strata_autograd PRIVATE ${STRATA_AUTOGRAD_OPS_ROOT})

# A shared library made of the objects of LAYERS (and of SOURCES, compiled as part of the
# last of them) that must link with no undefined symbol: what they call is defined in them.
function(strata_add_link_check target)
  cmake_parse_arguments(arg "" "" "LAYERS;SOURCES" ${ARGN})
  set(objects)
  set(libs)
  foreach(layer ${arg_LAYERS})
    list(APPEND objects $<TARGET_OBJECTS:strata_${layer}>)
    list(APPEND libs ${STRATA_LAYER_LIBS_${layer}})
  endforeach()
  list(GET arg_LAYERS -1 top)
  add_library(${target} SHARED ${objects} ${arg_SOURCES})
  strata_layer_settings(${target} ${top})
  target_link_libraries(${target} PRIVATE ${libs})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  # Clang links the sanitizer runtimes into executables only unless told otherwise.
  if(STRATA_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_link_options(${target} PRIVATE -shared-libsan)
  endif()
endfunction()
strata_add_link_check(strata_link_check_tensor LAYERS tensor)
strata_add_link_check(strata_link_check_dispatch LAYERS tensor dispatch)

# Every header of the lower layers compiled alone against its layer's root (see Note [Layers]).
function(strata_add_header_check)
  foreach(layer tensor dispatch autograd ops)
    file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}/${layer} ${CMAKE_SOURCE_DIR}/${layer}/*.h)
    set(layer_sources)
    foreach(header ${headers})
      string(REPLACE ".h" ".cpp" name ${header})
      set(source ${CMAKE_BINARY_DIR}/header_check/${layer}/${name})
      file(CONFIGURE OUTPUT ${source} CONTENT "#include <strata/${layer}/${header}>\n")
      list(APPEND layer_sources ${source})
    endforeach()
    add_library(strata_header_check_${layer} OBJECT ${layer_sources})
    strata_layer_settings(strata_header_check_${layer} ${layer})
    target_link_libraries(strata_header_check_${layer} PRIVATE ${STRATA_LAYER_LIBS_${layer}})
  endforeach()
endfunction()
