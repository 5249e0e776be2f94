#pragma once
// The built-in operators as free functions. Each one calls its operator through a cached
// typed handle (see Note [The path of one call] in dispatch/dispatcher.cpp); the kernels,
// shape functions and registrations live in the family files beside this one.
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <strata/tensor/parallel.h>
#include <strata/tensor/random.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor.h>

namespace strata {

// Creation. With no dtype given, tensor/full/arange infer it from the values. As in LibTorch,
// every factory reads the options' layout (only kStrided) and pinned_memory (CPU tensors in
// page-locked memory, with the CUDA backend); empty also reads memory_format.
// memory_format: given here or in the options (not both); Contiguous when neither sets it.
Tensor empty(IntArrayRef sizes, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
// Uninitialised, with the given strides (non-negative, one per size).
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options = {});
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
// steps values from start to end inclusive (float32 unless a dtype is given).
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
// The n x n (or n x m) identity matrix.
Tensor eye(int64_t n, TensorOptions options = {});
Tensor eye(int64_t n, int64_t m, TensorOptions options = {});
// Integers uniform in [0, high) or [low, high), int64 unless a dtype is given.
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options = {});
// The *_like functions: t's sizes; dtype and device from t unless the options set them. The
// strides follow memory_format (given here or in the options, not both); unset means Preserve,
// as in LibTorch: t's strides when they are dense (a transposed or channels-last t gives a
// result laid out the same way), else the format t's strides suggest.
Tensor empty_like(const Tensor& t, TensorOptions options = {},
                  std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor zeros_like(const Tensor& t, TensorOptions options = {},
                  std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor ones_like(const Tensor& t, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options = {},
                 std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor rand_like(const Tensor& t, TensorOptions options = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor randn_like(const Tensor& t, TensorOptions options = {},
                  std::optional<MemoryFormat> memory_format = std::nullopt);

// tensor(): copies values into a new tensor. With no dtype in the options, values written as
// literals (a single value, initializer lists) take the literal rule: floating -> the default
// dtype (kFloat32 unless set_default_dtype), int and wider -> kInt64, bool -> kBool (int8_t,
// int16_t and uint8_t values keep their dtype, as in LibTorch); a
// std::vector<T> keeps T's own dtype (int -> kInt32, double -> kFloat64, int8_t -> kInt8...).
// Nested initializer lists give n-d tensors (up to 10 dims); ragged lists throw ValueError.
template <class T>
  requires(std::is_arithmetic_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
Tensor tensor(T value, TensorOptions options = {});
template <class T>
concept TensorElement = std::is_arithmetic_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
namespace detail {
// Braced lists nested `Depth` deep: NestedList<T, 2> is std::initializer_list<std::initializer_list<T>>.
// Aliases (not a class) so that T is deduced from a braced argument.
template <class T> using NestedList1 = std::initializer_list<T>;
template <class T> using NestedList2 = std::initializer_list<NestedList1<T>>;
template <class T> using NestedList3 = std::initializer_list<NestedList2<T>>;
template <class T> using NestedList4 = std::initializer_list<NestedList3<T>>;
template <class T> using NestedList5 = std::initializer_list<NestedList4<T>>;
template <class T> using NestedList6 = std::initializer_list<NestedList5<T>>;
template <class T> using NestedList7 = std::initializer_list<NestedList6<T>>;
template <class T> using NestedList8 = std::initializer_list<NestedList7<T>>;
template <class T> using NestedList9 = std::initializer_list<NestedList8<T>>;
template <class T> using NestedList10 = std::initializer_list<NestedList9<T>>;
template <class Leaf, class List>
Tensor tensor_from_nested(const List& list, size_t rank, const TensorOptions& options);
}  // namespace detail
// Nested braced lists of 1 to 10 levels (LibTorch's limit), e.g. tensor({{1, 2}, {3, 4}}).
template <TensorElement T>
Tensor tensor(detail::NestedList1<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 1, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList2<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 2, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList3<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 3, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList4<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 4, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList5<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 5, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList6<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 6, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList7<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 7, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList8<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 8, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList9<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 9, options); }
template <TensorElement T>
Tensor tensor(detail::NestedList10<T> values, TensorOptions options = {}) { return detail::tensor_from_nested<T>(values, 10, options); }
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options = {});
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options = {});

namespace detail {
// Copies `count` values of dtype `data_dtype` into a new tensor of `sizes`, converted to the
// options' dtype (or `default_dtype` when the options give none). See tensor() above.
Tensor tensor_from_data(const void* data, ScalarType data_dtype, int64_t count, IntArrayRef sizes,
                        ScalarType default_dtype, const TensorOptions& options);

template <class T>
inline constexpr bool is_storage_type_v =
    std::is_same_v<T, bool> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> ||
    std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_same_v<T, float> ||
    std::is_same_v<T, double>;

// The literal rule (LibTorch's): bool -> kBool, int and wider integers -> kInt64, floating ->
// the default dtype; the narrow types strata has (uint8_t, int8_t, int16_t), Half and BFloat16
// keep their dtype.
template <class T>
ScalarType literal_dtype() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_integral_v<T> && is_storage_type_v<T> && sizeof(T) <= 2) return scalar_type_of<T>;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return scalar_type_of<T>;
  else return get_default_dtype();
}

// A std::vector<T>'s own dtype: T's when strata has it, else int64 for integers and float64 for
// long double.
template <class T>
ScalarType vector_dtype() {
  if constexpr (is_storage_type_v<T>) return scalar_type_of<T>;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else return kFloat64;
}

template <class T>
Tensor tensor_from_values(const T* values, int64_t count, IntArrayRef sizes, ScalarType default_dtype,
                          const TensorOptions& options) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                "strata::tensor: values must be numbers or bool");
  if constexpr (is_storage_type_v<T>) {
    return tensor_from_data(values, scalar_type_of<T>, count, sizes, default_dtype, options);
  } else {  // other integer widths (long long, size_t...) and long double
    using Wide = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    std::vector<Wide> wide(values, values + count);
    return tensor_from_data(wide.data(), scalar_type_of<Wide>, count, sizes, default_dtype, options);
  }
}

// Appends a nested list's values to `flat`, checking every level has the size `sizes` gives
// (the first list at each level sets it). Throws ValueError for ragged lists.
void check_nested_size(int64_t depth, int64_t expected, int64_t actual);
template <class T>
void flatten_nested(const T& value, std::vector<int64_t>&, size_t, std::vector<T>& flat) {
  flat.push_back(value);
}
template <class T, class Leaf>
void flatten_nested(std::initializer_list<T> list, std::vector<int64_t>& sizes, size_t depth, std::vector<Leaf>& flat) {
  const auto count = static_cast<int64_t>(list.size());
  if (sizes.size() == depth) sizes.push_back(count);
  else check_nested_size(static_cast<int64_t>(depth), sizes[depth], count);
  for (const T& item : list) flatten_nested(item, sizes, depth + 1, flat);
}
template <class Leaf, class List>
Tensor tensor_from_nested(const List& list, size_t rank, const TensorOptions& options) {
  std::vector<int64_t> sizes;
  std::vector<Leaf> flat;
  flatten_nested(list, sizes, 0, flat);
  sizes.resize(rank, 0);  // an empty list leaves the inner sizes unset: they are 0
  if constexpr (std::is_same_v<Leaf, bool>) {  // std::vector<bool> has no data()
    std::unique_ptr<bool[]> copy(new bool[flat.size() + 1]);
    std::copy(flat.begin(), flat.end(), copy.get());
    return tensor_from_values(copy.get(), static_cast<int64_t>(flat.size()), sizes, literal_dtype<Leaf>(), options);
  } else {
    return tensor_from_values(flat.data(), static_cast<int64_t>(flat.size()), sizes, literal_dtype<Leaf>(), options);
  }
}
}  // namespace detail

template <class T>
  requires(std::is_arithmetic_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
Tensor tensor(T value, TensorOptions options) {
  return detail::tensor_from_values(&value, 1, IntArrayRef(), detail::literal_dtype<T>(), options);
}

template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options) {
  const int64_t count = static_cast<int64_t>(values.size());
  return tensor(values, IntArrayRef(&count, 1), options);
}

template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options) {
  const int64_t count = static_cast<int64_t>(values.size());
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    std::unique_ptr<bool[]> copy(new bool[values.size() + 1]);
    std::copy(values.begin(), values.end(), copy.get());
    return detail::tensor_from_values(copy.get(), count, sizes, kBool, options);
  } else {
    return detail::tensor_from_values(values.data(), count, sizes, detail::vector_dtype<T>(), options);
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
// out= forms (out first, as LibTorch's at::add_out): `out` gets the result, resized if it has
// no elements; not differentiable.
const Tensor& add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& sub_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& mul_out(const Tensor& out, const Tensor& self, const Tensor& other);
const Tensor& div_out(const Tensor& out, const Tensor& self, const Tensor& other);

// Pointwise math and activations (ops/unary.cpp, ops/binary.cpp). exp, log, sqrt, rsqrt,
// sin, cos, tanh and sigmoid compute integral inputs in float32; gelu and silu take floating
// inputs only; float16/bfloat16 compute in float.
Tensor neg(const Tensor& self);
Tensor abs(const Tensor& self);
Tensor sign(const Tensor& self);
Tensor exp(const Tensor& self);
Tensor log(const Tensor& self);
Tensor sqrt(const Tensor& self);
Tensor rsqrt(const Tensor& self);
Tensor sin(const Tensor& self);
Tensor cos(const Tensor& self);
Tensor tanh(const Tensor& self);
Tensor sigmoid(const Tensor& self);
Tensor relu(const Tensor& self);
Tensor silu(const Tensor& self);
// approximate: "none" (the exact erf form) or "tanh".
Tensor gelu(const Tensor& self, std::string_view approximate = "none");
// grad_output * gelu'(self): gelu's derivative, an op with a derivative of its own.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate = "none");
// At least one bound must be given; integral self promotes with floating bounds.
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min = std::nullopt,
             const std::optional<Scalar>& max = std::nullopt);
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Tensor& self, const Scalar& exponent);
Tensor maximum(const Tensor& self, const Tensor& other);
Tensor minimum(const Tensor& self, const Tensor& other);
const Tensor& relu_(const Tensor& self);
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min = std::nullopt,
                     const std::optional<Scalar>& max = std::nullopt);
const Tensor& zero_(const Tensor& self);
const Tensor& fill_(const Tensor& self, const Scalar& value);
// out= forms of the above (out first, as add_out): resized if empty; not differentiable.
const Tensor& neg_out(const Tensor& out, const Tensor& self);
const Tensor& abs_out(const Tensor& out, const Tensor& self);
const Tensor& sign_out(const Tensor& out, const Tensor& self);
const Tensor& exp_out(const Tensor& out, const Tensor& self);
const Tensor& log_out(const Tensor& out, const Tensor& self);
const Tensor& sqrt_out(const Tensor& out, const Tensor& self);
const Tensor& rsqrt_out(const Tensor& out, const Tensor& self);
const Tensor& sin_out(const Tensor& out, const Tensor& self);
const Tensor& cos_out(const Tensor& out, const Tensor& self);
const Tensor& tanh_out(const Tensor& out, const Tensor& self);
const Tensor& sigmoid_out(const Tensor& out, const Tensor& self);
const Tensor& silu_out(const Tensor& out, const Tensor& self);
const Tensor& gelu_out(const Tensor& out, const Tensor& self, std::string_view approximate = "none");
const Tensor& clamp_out(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min = std::nullopt,
                        const std::optional<Scalar>& max = std::nullopt);
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent);
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent);
const Tensor& maximum_out(const Tensor& out, const Tensor& self, const Tensor& other);
const Tensor& minimum_out(const Tensor& out, const Tensor& self, const Tensor& other);

// Elementwise comparisons (ops/compare.cpp): kBool results, operands compared in their
// promoted dtype. where picks self where condition (kBool) holds, other elsewhere.
Tensor eq(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Scalar& other);
Tensor ne(const Tensor& self, const Tensor& other);
Tensor ne(const Tensor& self, const Scalar& other);
Tensor lt(const Tensor& self, const Tensor& other);
Tensor lt(const Tensor& self, const Scalar& other);
Tensor le(const Tensor& self, const Tensor& other);
Tensor le(const Tensor& self, const Scalar& other);
Tensor gt(const Tensor& self, const Tensor& other);
Tensor gt(const Tensor& self, const Scalar& other);
Tensor ge(const Tensor& self, const Tensor& other);
Tensor ge(const Tensor& self, const Scalar& other);
Tensor logical_not(const Tensor& self);
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);

// Reductions.
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// mean needs a floating input or a floating dtype; the input is cast to the dtype first.
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& self, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// out= forms of sum and mean over dims (empty: every dim); see add_out.
const Tensor& sum_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim = false,
                      std::optional<ScalarType> dtype = std::nullopt);
const Tensor& mean_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim = false,
                       std::optional<ScalarType> dtype = std::nullopt);
// Integral and bool inputs multiply into int64 unless a dtype is given (as sum).
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// max/min: values keep the dtype, indices are int64; NaN wins; ties pick the first element.
// Empty reductions throw IndexError. argmax/argmin with no dim index the flattened tensor.
Tensor max(const Tensor& self);
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& self);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// var/std over `dims` (empty: every dim), unbiased (correction 1) by default; floating only.
// There is no leading `bool unbiased` overload: var(t, {1}) and var(t, 1) reduce dim 1.
Tensor var(const Tensor& self, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& self, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
// log(sum(exp(x))) over dims, computed with the maximum subtracted; integral inputs give float32.
Tensor logsumexp(const Tensor& self, IntArrayRef dims, bool keepdim = false);
// The p-norm of all elements (p = 0 counts nonzeros, +-inf is the largest/smallest |x|).
Tensor norm(const Tensor& self, const Scalar& p = 2);

// Sums `t` down to `shape` over the dims broadcasting added or expanded (for gradients).
Tensor sum_to(const Tensor& t, IntArrayRef shape);

// Linear algebra.
Tensor matmul(const Tensor& self, const Tensor& other);
// mm: two matrices; bmm: two [b, n, m] and [b, m, p] batches (no broadcasting).
Tensor mm(const Tensor& self, const Tensor& mat2);
Tensor bmm(const Tensor& self, const Tensor& mat2);
// out= forms of matmul, mm and bmm; see add_out.
const Tensor& matmul_out(const Tensor& out, const Tensor& self, const Tensor& other);
const Tensor& mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);
const Tensor& bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);
// The transpose of a matrix (a view); 0-d and 1-d tensors come back as views of themselves.
Tensor t(const Tensor& self);
// input @ weight^T + bias for input [*, in_features], weight [out_features, in_features].
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt);

// Shape, views and copies.
Tensor view(const Tensor& self, IntArrayRef sizes);
Tensor reshape(const Tensor& self, IntArrayRef sizes);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor expand(const Tensor& self, IntArrayRef sizes);
// self when it already is in memory_format, else a copy in it (ChannelsLast: NHWC strides).
Tensor contiguous(const Tensor& self, MemoryFormat memory_format = MemoryFormat::Contiguous);
// A copy with memory_format's strides; unset (Preserve) keeps self's strides when they are dense.
Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format = std::nullopt);
const Tensor& copy_(const Tensor& self, const Tensor& src, bool non_blocking = false);
Tensor to(const Tensor& self, const TensorOptions& options, bool non_blocking = false, bool copy = false,
          std::optional<MemoryFormat> memory_format = std::nullopt);

// More shape ops and views (ops/shape.cpp). Views share storage and the version counter.
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor unsqueeze(const Tensor& self, int64_t dim);
tensor_list split(const Tensor& self, int64_t split_size, int64_t dim = 0);
tensor_list split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
tensor_list chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
// Type promotion across the inputs; 1-d tensors of shape [0] are skipped, as in PyTorch.
Tensor cat(const tensor_list& tensors, int64_t dim = 0);
// cat into `out` (resized if it has no elements; not differentiable), as LibTorch's at::cat_out.
const Tensor& cat_out(const Tensor& out, const tensor_list& tensors, int64_t dim = 0);
Tensor stack(const tensor_list& tensors, int64_t dim = 0);
// A view of self's storage with the given geometry (ops/view.cpp); storage_offset defaults to
// self's. Differentiable; the gradient sums where the geometry overlaps itself.
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset = std::nullopt);

// Indexing (ops/index.cpp). slice clamps start/end like Python; step must be positive.
Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
// index_select into `out` (resized if it has no elements; not differentiable).
const Tensor& index_select_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad = false);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);  // value: a 0-d tensor
// The gradients of slice and select: zeros of input_sizes with grad_output in the viewed part.
Tensor slice_backward(const Tensor& grad_output, IntArrayRef input_sizes, int64_t dim, int64_t start, int64_t end,
                      int64_t step);
Tensor select_backward(const Tensor& grad_output, IntArrayRef input_sizes, int64_t dim, int64_t index);

// Neural-network functions (ops/nn.cpp). softmax and log_softmax subtract each slice's
// maximum first, so large logits are safe; dtype converts the input before the op.
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// In training mode zeroes each element with probability p and scales the rest by 1 / (1 - p);
// reproducible under manual_seed. Not training (or p = 0) returns the input itself.
Tensor dropout(const Tensor& input, double p, bool train);
// Normalizes over the trailing dims given by normalized_shape, then scales and shifts.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = {},
                  const std::optional<Tensor>& bias = {}, double eps = 1e-5);
// Rows of weight [num_embeddings, dim] picked by indices: result shape indices.sizes() + [dim].
// The gradient adds into the picked rows, skipping padding_idx (when >= 0).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
// Convolution and pooling (ops/conv.cpp). input [N, C, H, W] or unbatched [C, H, W];
// weight [out_channels, C / groups, kH, kW]; bias [out_channels].
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
              int64_t groups = 1);
// stride defaults to kernel_size; the window maxima's indices are kept for backward.
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                  IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
// The maxima and, for each, its flat index in its input plane (H * W), as int64.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
                                                   bool ceil_mode = false);

// Losses (ops/loss.cpp). Schemas take `int reduction` with PyTorch's values.
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
// input [C], [N, C] or [N, C, d1...]; target of class indices (int64) of shape [], [N] or
// [N, d1...]. Mean divides by the total weight of the targets that are not ignore_index.
Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
// log_softmax over the class dim then nll_loss, with PyTorch's label smoothing; a floating
// target of the input's shape holds class probabilities instead of indices.
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100, double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean);
// Stable for logits of any size; target has self's shape, weight and pos_weight (the weight
// of positive targets, e.g. one per class) broadcast to it.
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                                        const std::optional<Tensor>& pos_weight = {},
                                        Reduction reduction = Reduction::Mean);

// Comparisons of whole tensors (not ops: they return bool).
bool equal(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

// broadcast_shapes and result_type: tensor/shape_checks.h.

}  // namespace strata
