// Built (not run) by the layering_* ctests, each time with one CASE_* and the include roots of
// the layer named in it: every case but the CASE_ALLOWED_* ones must fail to compile, with
// "No such file or directory" for the header of the higher layer. See Note [Layers] in
// cmake/StrataLayers.cmake.
#if defined(CASE_TENSOR_INCLUDES_OPS)
#include <strata/ops/ops.h>
#elif defined(CASE_TENSOR_INCLUDES_DISPATCH)
#include <strata/dispatch/dispatcher.h>
#elif defined(CASE_DISPATCH_INCLUDES_AUTOGRAD)
#include <strata/autograd/function.h>
#elif defined(CASE_AUTOGRAD_HEADER_INCLUDES_OPS)  // autograd's headers see no ops/ header at all
#include <strata/ops/ops.h>
#elif defined(CASE_AUTOGRAD_INCLUDES_OPS_INTERNALS)  // its .cpp files see the public op header only
#include <strata/ops/op_helpers.h>
#elif defined(CASE_OPS_INCLUDES_NN)
#include <strata/nn/module.h>
#elif defined(CASE_ALLOWED_TENSOR)
#include <strata/tensor/tensor.h>
#elif defined(CASE_ALLOWED_AUTOGRAD_CALLS_OPS)
#include <strata/autograd/function.h>
#include <strata/ops/ops.h>
#else
#error "compile with one CASE_* defined"
#endif

int strata_layering_probe() { return 0; }
