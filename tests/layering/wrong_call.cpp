// Linked (not run) by the layering_tensor_calls_ops ctest into a shared library with tensor/'s
// objects and --no-undefined: compiled as part of tensor/, it calls a Tensor method that
// tensor/tensor.h declares and ops/ defines, which the include roots cannot see, so the link
// must fail. See Note [Layers] in cmake/StrataLayers.cmake.
#include <strata/tensor/tensor.h>

strata::Tensor strata_layering_contiguous(const strata::Tensor& tensor) { return tensor.contiguous(); }
