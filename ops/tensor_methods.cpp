// Tensor methods and operators that run ops: each forwards to the free function in ops.h,
// which dispatches through its cached operator handle.
#include <strata/ops/ops.h>

namespace strata {

Tensor Tensor::to(const TensorOptions& options, bool copy) const { return strata::to(*this, options, copy); }
Tensor Tensor::cpu() const { return strata::to(*this, TensorOptions(Device(kCPU))); }
Tensor Tensor::cuda() const { return strata::to(*this, TensorOptions(Device(kCUDA))); }
Tensor Tensor::contiguous() const { return strata::contiguous(*this); }
Tensor Tensor::clone() const { return strata::clone(*this); }
const Tensor& Tensor::copy_(const Tensor& src) const { return strata::copy_(*this, src); }

// A new tensor sharing storage, geometry and the version counter, without autograd state.
Tensor Tensor::detach() const { return detail::make_view(*this, sizes(), strides(), storage_offset()); }

Tensor Tensor::view(IntArrayRef sizes) const { return strata::view(*this, sizes); }
Tensor Tensor::reshape(IntArrayRef sizes) const { return strata::reshape(*this, sizes); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return strata::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(IntArrayRef dims) const { return strata::permute(*this, dims); }
Tensor Tensor::expand(IntArrayRef sizes) const { return strata::expand(*this, sizes); }

Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const { return strata::add(*this, other, alpha); }
Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const { return strata::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const { return strata::sub(*this, other, alpha); }
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const { return strata::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return strata::mul(*this, other); }
Tensor Tensor::mul(const Scalar& other) const { return strata::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return strata::div(*this, other); }
Tensor Tensor::div(const Scalar& other) const { return strata::div(*this, other); }
const Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const { return strata::add_(*this, other, alpha); }
const Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) const { return strata::add_(*this, other, alpha); }
const Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const { return strata::sub_(*this, other, alpha); }
const Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha) const { return strata::sub_(*this, other, alpha); }
const Tensor& Tensor::mul_(const Tensor& other) const { return strata::mul_(*this, other); }
const Tensor& Tensor::mul_(const Scalar& other) const { return strata::mul_(*this, other); }
const Tensor& Tensor::div_(const Tensor& other) const { return strata::div_(*this, other); }
const Tensor& Tensor::div_(const Scalar& other) const { return strata::div_(*this, other); }

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return strata::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return strata::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::matmul(const Tensor& other) const { return strata::matmul(*this, other); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }

// Note [Scalar on the left]
// a - t and a / t have no ATen op of their own here: a becomes a 0-d tensor of the dtype
// result_type(t, a) gives, which then promotes exactly as the Scalar would have (a 0-d
// tensor of the result dtype never changes it), and the tensor op runs.
namespace {
Tensor scalar_as_tensor(const Scalar& value, const Tensor& like) {
  return full({}, value, TensorOptions().dtype(result_type(like, value)).device(like.device()));
}
}  // namespace

Tensor operator-(const Scalar& a, const Tensor& b) { return sub(scalar_as_tensor(a, b), b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(scalar_as_tensor(a, b), b); }

// Negation is multiplication by -1, exact in every dtype; bool tensors are refused like
// PyTorch's neg.
Tensor operator-(const Tensor& a) {
  STRATA_CHECK_TYPE(a.dtype() != kBool, "[neg] negation, the `-` operator, on a bool tensor is not supported; "
                                        "use logical_not() instead");
  return mul(a, -1);
}

}  // namespace strata
