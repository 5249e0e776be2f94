#pragma once
// Internal to ops/ (not public API): tensors seen around one dim, and adapters between
// operator schemas and autograd Functions.
//
// Note [Optional tensors in Functions]
// autograd::Function records a gradient edge for every tensor of its forward arguments,
// `Tensor?` and `Tensor[]` included (Note [Function inputs] in autograd/function.h). Built-in
// ops with optional tensor inputs (a weight, a bias) predate that: they register a small
// Autograd lambda that unwraps each optional into a Tensor (undefined for None) and calls a
// Function taking plain Tensors, whose forward wraps them back with as_optional(). Both ways
// give the same edges; an undefined Tensor records none and gets no gradient. Ops returning a
// tuple convert the Function's tensor_list (or use kernel<F, std::tuple<...>>()).
#include <optional>
#include <tuple>
#include <utility>

#include <strata/tensor/tensor.h>

namespace strata::detail {

// A contiguous tensor seen as [outer, size, inner] around `dim` (all 1 for a 0-d tensor).
struct DimLayout {
  int64_t outer = 1, size = 1, inner = 1;
};

inline DimLayout layout_around(IntArrayRef sizes, int64_t dim) {
  DimLayout layout;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d < dim) layout.outer *= sizes[d];
    else if (d == dim) layout.size = sizes[d];
    else layout.inner *= sizes[d];
  }
  return layout;
}

inline Tensor value_or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

inline std::optional<Tensor> as_optional(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

inline std::tuple<Tensor, Tensor> to_tuple2(tensor_list&& list) {
  return {std::move(list[0]), std::move(list[1])};
}

inline std::tuple<Tensor, Tensor, Tensor> to_tuple3(tensor_list&& list) {
  return {std::move(list[0]), std::move(list[1]), std::move(list[2])};
}

}  // namespace strata::detail
