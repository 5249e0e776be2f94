# Checks the shape-function headers (ops/shapes/*.h, Note [Structured ops] in ops/structured.h):
# each includes nothing of strata's but tensor/ headers, and, when NVCC is given, all of them
# compile under nvcc, as a CUDA backend's kernels will include them.
# cmake -DSOURCE_DIR=<repo> -DINCLUDE_DIR=<dir holding strata/> -DWORK_DIR=<dir> [-DNVCC=<nvcc>] -P <this file>
file(GLOB headers ${SOURCE_DIR}/ops/shapes/*.h)
list(LENGTH headers count)
if(count EQUAL 0)
  message(FATAL_ERROR "no shape headers found under ${SOURCE_DIR}/ops/shapes")
endif()
set(source "")
foreach(header ${headers})
  get_filename_component(name ${header} NAME)
  file(STRINGS ${header} includes REGEX "^#include <strata/")
  foreach(line ${includes})
    if(NOT line MATCHES "^#include <strata/(tensor/|ops/shapes/)")
      message(FATAL_ERROR "ops/shapes/${name}: '${line}': shape headers may include only tensor/ and ops/shapes/ headers")
    endif()
  endforeach()
  string(APPEND source "#include <strata/ops/shapes/${name}>\n")
endforeach()
message(STATUS "${count} shape headers include only tensor/ headers")
if(NVCC)
  string(APPEND source "int main() { return 0; }\n")
  file(WRITE ${WORK_DIR}/shape_headers_check.cu "${source}")
  execute_process(COMMAND ${NVCC} -std=c++20 -I${INCLUDE_DIR} -c ${WORK_DIR}/shape_headers_check.cu
                          -o ${WORK_DIR}/shape_headers_check.o
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "nvcc could not compile the shape headers:\n${output}")
  endif()
  message(STATUS "${count} shape headers compile under nvcc")
endif()
