#pragma once
// The built-in operators as free functions. Each one calls its operator through a cached
// typed handle (see Note [The path of one call] in dispatch/dispatcher.cpp); the kernels,
// shape functions and registrations live in the family files beside this one.
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include <strata/tensor/parallel.h>
#include <strata/tensor/random.h>
#include <strata/tensor/tensor.h>

namespace strata {

// Creation. With no dtype given, tensor/full/arange infer it from the values.
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options = {});
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
Tensor empty_like(const Tensor& t, TensorOptions options = {});
Tensor zeros_like(const Tensor& t, TensorOptions options = {});
Tensor ones_like(const Tensor& t, TensorOptions options = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options = {});
Tensor rand_like(const Tensor& t, TensorOptions options = {});
Tensor randn_like(const Tensor& t, TensorOptions options = {});

template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options = {});
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options = {});

namespace detail {
// Copies `count` values of dtype `data_dtype` into a new tensor of `sizes`, converted to the
// options' dtype (or `default_dtype` when the options give none). See tensor() below.
Tensor tensor_from_data(const void* data, ScalarType data_dtype, int64_t count, IntArrayRef sizes,
                        ScalarType default_dtype, const TensorOptions& options);

template <class T>
inline constexpr bool is_storage_type_v =
    std::is_same_v<T, bool> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

// bool -> kBool, integral -> kInt64, floating -> kFloat32; Half and BFloat16 keep their dtype.
template <class T>
constexpr ScalarType literal_dtype() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return scalar_type_of<T>;
  else return kFloat32;
}

template <class T>
Tensor tensor_from_values(const T* values, int64_t count, IntArrayRef sizes, const TensorOptions& options) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                "strata::tensor: values must be numbers or bool");
  if constexpr (is_storage_type_v<T>) {
    return tensor_from_data(values, scalar_type_of<T>, count, sizes, literal_dtype<T>(), options);
  } else {  // other integer widths (short, long long, size_t...) and long double
    using Wide = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    std::vector<Wide> wide(values, values + count);
    return tensor_from_data(wide.data(), scalar_type_of<Wide>, count, sizes, literal_dtype<T>(), options);
  }
}
}  // namespace detail

template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options) {
  const int64_t count = static_cast<int64_t>(values.size());
  return detail::tensor_from_values(values.begin(), count, IntArrayRef(&count, 1), options);
}

template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options) {
  const int64_t count = static_cast<int64_t>(values.size());
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    std::unique_ptr<bool[]> copy(new bool[values.size() + 1]);
    std::copy(values.begin(), values.end(), copy.get());
    return detail::tensor_from_values(copy.get(), count, sizes, options);
  } else {
    return detail::tensor_from_values(values.data(), count, sizes, options);
  }
}

// Pointwise arithmetic with broadcasting and type promotion.
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor mul(const Tensor& self, const Tensor& other);
Tensor mul(const Tensor& self, const Scalar& other);
Tensor div(const Tensor& self, const Tensor& other);
Tensor div(const Tensor& self, const Scalar& other);
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Scalar& other);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Scalar& other);

// Reductions.
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);

// Sums `t` down to `shape` over the dims broadcasting added or expanded (for gradients).
Tensor sum_to(const Tensor& t, IntArrayRef shape);

// Linear algebra.
Tensor matmul(const Tensor& self, const Tensor& other);

// Shape, views and copies.
Tensor view(const Tensor& self, IntArrayRef sizes);
Tensor reshape(const Tensor& self, IntArrayRef sizes);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor expand(const Tensor& self, IntArrayRef sizes);
Tensor contiguous(const Tensor& self);
Tensor clone(const Tensor& self);
const Tensor& copy_(const Tensor& self, const Tensor& src);
Tensor to(const Tensor& self, const TensorOptions& options, bool copy = false);

// Comparisons of whole tensors (not ops: they return bool).
bool equal(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

// Broadcast shape of two shapes; throws ValueError naming `op` when they do not broadcast.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);
// torch.result_type for tensor-tensor and tensor-scalar operands.
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);

}  // namespace strata
