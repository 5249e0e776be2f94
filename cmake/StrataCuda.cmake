# Note [The CUDA backend library]
# cuda/ builds as its own shared library, strata_cuda, on top of strata: like any op library it
# registers its kernels (CUDA key) and its DeviceHooks when it loads. CPU-only builds have no
# cuda/ at all, so their users never need the CUDA runtime. The runtime is linked statically
# (cudart_static opens the driver, libcuda, only when called), so a machine without a GPU or a
# driver loads strata_cuda fine and sees "no device" (the hooks keep the runtime's reason for
# error messages). strata::strata brings strata_cuda in: it is an interface link dependency of
# strata, linked without --as-needed because nothing calls into it by name.
# Its sources see every layer below (tensor, dispatch, autograd, ops, jit) and cuda/ itself; its
# headers are internal (not installed), so CUDA headers never reach public ones. Warnings are
# errors in cuda/.
strata_make_include_root(${STRATA_LAYER_ROOTS}/cuda tensor dispatch autograd ops jit cuda)

file(GLOB strata_cuda_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cuda/*.cpp ${CMAKE_SOURCE_DIR}/cuda/*.cu)
add_library(strata_cuda SHARED ${strata_cuda_sources})
add_library(strata::strata_cuda ALIAS strata_cuda)
target_include_directories(strata_cuda PRIVATE ${STRATA_LAYER_ROOTS}/cuda)
target_link_libraries(strata_cuda PUBLIC strata PRIVATE strata_flags CUDA::cudart_static CUDA::cublas)
target_compile_options(strata_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror --expt-relaxed-constexpr --extended-lambda>)
set_target_properties(strata_cuda PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0
                      CUDA_SEPARABLE_COMPILATION OFF CUDA_RUNTIME_LIBRARY None)

set(CMAKE_LINK_LIBRARY_USING_STRATA_NO_AS_NEEDED
    "LINKER:--push-state,--no-as-needed" "<LINK_ITEM>" "LINKER:--pop-state")
set(CMAKE_LINK_LIBRARY_USING_STRATA_NO_AS_NEEDED_SUPPORTED TRUE)
# (The installed package names the imported target, which CMake does not rename inside $<LINK_LIBRARY>.)
target_link_libraries(strata INTERFACE "$<BUILD_INTERFACE:$<LINK_LIBRARY:STRATA_NO_AS_NEEDED,strata_cuda>>"
                                       "$<INSTALL_INTERFACE:$<LINK_LIBRARY:STRATA_NO_AS_NEEDED,strata::strata_cuda>>")
set(STRATA_CUDA_TARGETS strata_cuda)
