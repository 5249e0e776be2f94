#pragma once
// The order of dims in which elementwise ops lay out their results and walk their operands.
// See Note [Strides of elementwise results]. Compiles under nvcc.
#include <functional>
#include <initializer_list>
#include <span>

#include <strata/tensor/tensor.h>

namespace strata::detail {

// Note [Strides of elementwise results]
// As in LibTorch (TensorIterator), the result of an elementwise op follows the layout of its
// inputs: exp(x.t()) is transposed, relu of a channels-last tensor is channels last, and a
// mixed case follows the first input that orders a pair of dims. The rule, per pair of dims:
// the first input whose strides along both dims are non-zero orders them by those strides (a
// tie goes to the smaller dim inside); inputs broadcast along either dim have no say; a pair
// no input orders keeps its logical order. So:
//   - inputs all contiguous: a contiguous result (the common case, decided without sorting);
//   - inputs of the result's sizes sharing one dense layout: a result with their strides;
//   - otherwise: the dims sorted by that rule, the result dense in that order.
// Results stay dense, so the loops below still see one block per operand.

// The dims of `sizes` ordered innermost first by the rule above. strides[k] are operand k's
// strides along the dims of `sizes`, 0 where it is broadcast; the first operand decides first.
DimVector innermost_first(IntArrayRef sizes, std::span<const IntArrayRef> strides);

// The strides of a new result of `sizes` computed elementwise from `inputs` (broadcast to
// `sizes`), by the rule above. Empty when the result is contiguous.
DimVector elementwise_strides(IntArrayRef sizes, std::initializer_list<std::reference_wrapper<const Tensor>> inputs);

}  // namespace strata::detail
