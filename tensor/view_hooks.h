#pragma once
// Internal to tensor/ and autograd/: what make_view tells autograd about a new view (tensor/
// does not link to autograd/; see Note [Layers] in cmake/StrataLayers.cmake).
#include <strata/tensor/tensor.h>

namespace strata::detail {

// Runs for every view make_view makes whose root base requires grad, before the view is
// returned. See Note [Views made without grad] in autograd/variable.cpp.
using ViewMadeHook = void (*)(const Tensor& view);
void set_view_made_hook(ViewMadeHook hook);

}  // namespace strata::detail
