#pragma once
// Shape functions of the reduction families (ops/reduce.cpp: sum, mean, prod;
// ops/reduce_minmax.cpp: max, min, argmax, argmin; ops/reduce_stats.cpp: var, std, logsumexp,
// norm) and of their out= variants. See Note [Structured ops] in ops/structured.h. Depends on
// tensor/ only; compiles under nvcc.
#include <algorithm>
#include <array>
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// What a reduction of `self` over some dims gives: the output's sizes and dtype, and what the
// backends and derivatives need to fold and to broadcast back.
struct ReduceShape {
  DimVector out_sizes;   // keepdim applied
  DimVector kept_sizes;  // the input's shape with the reduced dims set to 1 (for gradients)
  DimVector reduced;     // per input dim: 1 when reduced
  int64_t count = 1;     // how many input elements fold into each output element
  ScalarType dtype;      // output dtype
};

// No dims (or an empty list) reduces every dim; a 0-d tensor accepts dim 0 and -1. The dtype
// is sum's: the given one, else int64 for integral and bool inputs, else the input's.
inline ReduceShape reduce_shape(const char* op, const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim,
                                std::optional<ScalarType> dtype) {
  const int64_t ndim = self.dim();
  ReduceShape shape;
  shape.reduced.assign(static_cast<size_t>(ndim), dims && !dims->empty() ? 0 : 1);
  if (dims) {
    for (int64_t dim : *dims) {
      const int64_t d = wrap_dim(dim, std::max<int64_t>(ndim, 1), op);
      if (ndim == 0) continue;  // a 0-d tensor accepts dim 0 / -1
      STRATA_CHECK_VALUE(!shape.reduced[d], "[", op, "] dim ", d, " appears multiple times in the list of dims ",
                         *dims);
      shape.reduced[d] = 1;
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = self.sizes()[d];
    if (!shape.reduced[d]) shape.out_sizes.push_back(size);
    else if (keepdim) shape.out_sizes.push_back(1);
    shape.kept_sizes.push_back(shape.reduced[d] ? 1 : size);
    if (shape.reduced[d]) shape.count *= size;
  }
  shape.dtype = dtype ? *dtype : is_integral(self.dtype(), /*include_bool=*/true) ? kInt64 : self.dtype();
  return shape;
}

inline IntArrayRef single_dim(const int64_t& dim) { return IntArrayRef(&dim, 1); }

inline TensorMeta reduce_meta(const Tensor& self, const ReduceShape& shape) {
  return {shape.out_sizes, shape.dtype, self.device()};
}

// Throws IndexError naming `op` when a reduction without identity meets an empty dim.
inline void check_nonempty_reduction(const char* op, const Tensor& self, const ReduceShape& shape) {
  STRATA_CHECK_INDEX(shape.count > 0, "[", op, "] cannot reduce over a zero-size dimension of a tensor of shape ",
                     self.sizes(), ": ", op, " has no identity");
}

// ---------------------------------------------------------------------------------------
// sum, mean, prod (ops/reduce.cpp).

// mean: like PyTorch it needs a floating input or a floating dtype argument.
inline ReduceShape mean_shape(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim,
                              std::optional<ScalarType> dtype) {
  const ScalarType result = dtype.value_or(self.dtype());
  STRATA_CHECK_TYPE(is_floating_point(result), "[mean] could not infer the output dtype: ",
                    dtype ? "the dtype argument" : "the input dtype", " must be floating point, got ", result);
  return reduce_shape("mean", self, dims, keepdim, result);
}

inline TensorMeta sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return reduce_meta(self, reduce_shape("sum", self, std::nullopt, false, dtype));
}
inline TensorMeta sum_dim_IntList(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                                  std::optional<ScalarType> dtype) {
  return reduce_meta(self, reduce_shape("sum", self, dim, keepdim, dtype));
}
inline TensorMeta mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return reduce_meta(self, mean_shape(self, std::nullopt, false, dtype));
}
inline TensorMeta mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                           std::optional<ScalarType> dtype) {
  return reduce_meta(self, mean_shape(self, dim, keepdim, dtype));
}
inline TensorMeta prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return reduce_meta(self, reduce_shape("prod", self, std::nullopt, false, dtype));
}
inline TensorMeta prod_dim_int(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_meta(self, reduce_shape("prod", self, single_dim(dim), keepdim, dtype));
}

// ---------------------------------------------------------------------------------------
// max, min, argmax, argmin (ops/reduce_minmax.cpp). Note [Extremum reductions]
// Values keep the input's dtype (bool included); indices are int64. A reduction over no
// elements has no answer and throws IndexError. NaN wins over every number (the first NaN
// is picked), and among equal values the first one is picked, so indices are deterministic.

inline ReduceShape extremum_shape(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                                  ScalarType dtype) {
  const std::optional<IntArrayRef> dims = dim ? std::optional<IntArrayRef>(single_dim(*dim)) : std::nullopt;
  ReduceShape shape = reduce_shape(op, self, dims, keepdim, dtype);
  check_nonempty_reduction(op, self, shape);
  return shape;
}

inline TensorMeta max(const Tensor& self) {
  return reduce_meta(self, extremum_shape("max", self, std::nullopt, false, self.dtype()));
}
inline TensorMeta min(const Tensor& self) {
  return reduce_meta(self, extremum_shape("min", self, std::nullopt, false, self.dtype()));
}
inline std::array<TensorMeta, 2> extremum_dim(const char* op, const Tensor& self, int64_t dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(op, self, dim, keepdim, self.dtype());
  return {TensorMeta(shape.out_sizes, self.dtype(), self.device()), TensorMeta(shape.out_sizes, kInt64, self.device())};
}
inline std::array<TensorMeta, 2> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return extremum_dim("max", self, dim, keepdim);
}
inline std::array<TensorMeta, 2> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return extremum_dim("min", self, dim, keepdim);
}
// With no dim, the index is into the flattened (row-major) input.
inline TensorMeta argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return reduce_meta(self, extremum_shape("argmax", self, dim, keepdim, kInt64));
}
inline TensorMeta argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return reduce_meta(self, extremum_shape("argmin", self, dim, keepdim, kInt64));
}

// ---------------------------------------------------------------------------------------
// var, std, logsumexp, norm (ops/reduce_stats.cpp).

inline ReduceShape floating_shape(const char* op, const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim) {
  STRATA_CHECK_TYPE(is_floating_point(self.dtype()), "[", op, "] expected a floating point input, got ", self.dtype());
  return reduce_shape(op, self, dims, keepdim, self.dtype());
}

// Integral and bool inputs compute in float32.
inline ReduceShape logsumexp_shape(const Tensor& self, IntArrayRef dims, bool keepdim) {
  const ScalarType dtype = is_floating_point(self.dtype()) ? self.dtype() : kFloat32;
  return reduce_shape("logsumexp", self, dims, keepdim, dtype);
}

inline TensorMeta var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool /*unbiased*/, bool keepdim) {
  return reduce_meta(self, floating_shape("var", self, dim, keepdim));
}
inline TensorMeta std_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool /*unbiased*/, bool keepdim) {
  return reduce_meta(self, floating_shape("std", self, dim, keepdim));
}
inline TensorMeta logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce_meta(self, logsumexp_shape(self, dim, keepdim));
}
inline TensorMeta norm_Scalar(const Tensor& self, const Scalar& /*p*/) {
  return reduce_meta(self, floating_shape("norm", self, std::nullopt, false));
}

}  // namespace strata::shapes
