#pragma once
// Shape, dtype and device rules shared by every op's shape function and every backend:
// broadcasting, type promotion (torch.result_type), casting rules and the overlap checks of
// written tensors. Depends on tensor/ only, and compiles under nvcc (no Eigen, no OpenMP).
#include <cmath>
#include <limits>
#include <type_traits>

#include <strata/tensor/tensor.h>

namespace strata {

// Broadcast shape of two shapes; throws ValueError naming `op` when they do not broadcast.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);
// torch.result_type for tensor-tensor and tensor-scalar operands. See Note [Result type].
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);

namespace detail {

// Throws Error "[op] expected all tensors on the same device, got cpu and meta".
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// Strides (in elements) of `t` seen with the broadcast shape `sizes`: 0 along broadcast dims.
DimVector broadcast_strides(IntArrayRef sizes, const Tensor& t);
// PyTorch's canCast: no floating -> integral, no non-bool -> bool.
bool can_cast(ScalarType from, ScalarType to);
// Throws Error "[op] result type Float32 can't be cast to the desired output type Int64".
void check_can_cast(const char* op, ScalarType from, ScalarType to);
// Throws Error when several elements of `t` share memory (an expanded tensor written to).
void check_no_internal_overlap(const char* op, const Tensor& t);
// Note [Overlapping in-place ops]
// An in-place or out= kernel reads `input` while it writes `written`. When both sit in one
// storage, their element ranges intersect and their geometries differ (a.add_(a.t()),
// x.slice(0, 1).mul_(x.slice(0, 0, -1))), an element may be read after it was overwritten, so
// the result depends on the loop order: throw, as LibTorch does. Identical geometry
// (a.add_(a)) reads each element before writing it, and is fine. Ranges that interleave
// without sharing an element (x.select(1, 0).add_(x.select(1, 1))) are fine too: where the
// ranges intersect, the elements themselves are compared (LibTorch lets every case it cannot
// decide through, overlapping or not). Every in-place kernel with tensor inputs calls this for
// each of them.
void check_no_partial_overlap(const char* op, const Tensor& written, const Tensor& input);

// Throws ValueError "[op] value V cannot be converted to type TYPE without overflow" when a
// Scalar argument cannot convert to `dtype` by the rules of Note [Checked scalar conversion]
// (ops/elementwise.h): the check a shape function makes of its Scalar arguments, so that Meta
// and every backend refuse the same values.
inline void check_scalar_converts(const char* op, const Scalar& value, ScalarType dtype) {
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else if constexpr (std::is_integral_v<T>) {
      (void)value.to<T>(op);
    } else {
      double max_value = 0;
      if constexpr (std::is_same_v<T, Half>) max_value = 65504.0;
      else if constexpr (std::is_same_v<T, BFloat16>) max_value = 3.3895313892515355e38;
      else max_value = static_cast<double>(std::numeric_limits<T>::max());
      const double d = value.to_double();
      if (std::isfinite(d) && std::abs(d) > max_value) value.throw_does_not_fit(op, scalar_type_name(dtype));
    }
  });
}

}  // namespace detail
}  // namespace strata
