// Tensor methods and operators that run ops: each forwards to the free function in ops.h,
// which dispatches through its cached operator handle.
#include <strata/ops/ops.h>
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/tensor_meta.h>
#include <strata/tensor/stream.h>

namespace strata {

Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy,
                  std::optional<MemoryFormat> memory_format) const {
  return strata::to(*this, options, non_blocking, copy, memory_format);
}
Tensor Tensor::to(const Tensor& other, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  return strata::to(*this, TensorOptions().dtype(other.dtype()).device(other.device()), non_blocking, copy,
                    memory_format);
}
Tensor Tensor::to(Device device, ScalarType dtype, bool non_blocking, bool copy,
                  std::optional<MemoryFormat> memory_format) const {
  return strata::to(*this, TensorOptions().dtype(dtype).device(device), non_blocking, copy, memory_format);
}
Tensor Tensor::to(DeviceType device, ScalarType dtype, bool non_blocking, bool copy,
                  std::optional<MemoryFormat> memory_format) const {
  return strata::to(*this, TensorOptions().dtype(dtype).device(device), non_blocking, copy, memory_format);
}
Tensor Tensor::cpu() const { return strata::to(*this, TensorOptions(Device(kCPU))); }
// The current CUDA device, as in LibTorch; without a backend, cuda:0 (whose copy then says
// that no CUDA backend is loaded).
Tensor Tensor::cuda() const { return strata::to(*this, TensorOptions(kCUDA)); }
Tensor Tensor::pin_memory() const {
  STRATA_CHECK_VALUE(is_cpu(), "[pin_memory] expected a CPU tensor, got one on ", device());
  if (is_pinned()) return *this;
  Tensor pinned = detail::empty_pinned(sizes(), dtype(), "pin_memory");
  pinned.copy_(*this);  // records CopyBackward when this tensor requires grad
  return pinned;
}

bool Tensor::is_pinned() const {
  if (!is_cpu()) return false;
  const DeviceHooks* hooks = detail::device_hooks(kCUDA);
  return hooks != nullptr && hooks->is_pinned(impl()->storage()->data());
}

void Tensor::record_stream(const Stream& stream) const {
  if (!is_cuda()) return;
  STRATA_CHECK_VALUE(stream.device().type() == kCUDA, "[record_stream] expected a CUDA stream, got ", stream);
  detail::require_device_hooks(kCUDA, "record_stream").record_stream(impl()->storage()->data(), stream);
}

Tensor Tensor::new_empty(IntArrayRef sizes, TensorOptions options) const {
  return strata::empty(sizes, options.merged_with(this->options()));
}
Tensor Tensor::new_zeros(IntArrayRef sizes, TensorOptions options) const {
  return strata::zeros(sizes, options.merged_with(this->options()));
}
Tensor Tensor::new_ones(IntArrayRef sizes, TensorOptions options) const {
  return strata::ones(sizes, options.merged_with(this->options()));
}
Tensor Tensor::new_full(IntArrayRef sizes, const Scalar& fill_value, TensorOptions options) const {
  return strata::full(sizes, fill_value, options.merged_with(this->options()));
}
Tensor Tensor::contiguous(MemoryFormat memory_format) const { return strata::contiguous(*this, memory_format); }
Tensor Tensor::clone(std::optional<MemoryFormat> memory_format) const { return strata::clone(*this, memory_format); }
bool Tensor::is_contiguous(MemoryFormat memory_format) const {
  if (memory_format == MemoryFormat::Contiguous) return is_contiguous();
  STRATA_CHECK_VALUE(memory_format != MemoryFormat::Preserve,
                     "[is_contiguous] memory format Preserve is not a layout to test against");
  // A channels-last format of another rank is simply not this tensor's layout (no error).
  if (memory_format != MemoryFormat::ChannelsLast && memory_format != MemoryFormat::ChannelsLast3d)
    detail::check_memory_format(memory_format, dim(), "is_contiguous");  // an out-of-range value
  return detail::is_contiguous_as(sizes(), strides(), memory_format);
}
bool Tensor::is_non_overlapping_and_dense() const { return detail::is_non_overlapping_and_dense(sizes(), strides()); }
MemoryFormat Tensor::suggest_memory_format() const { return detail::suggest_memory_format(sizes(), strides()); }
const Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  return strata::copy_(*this, src, non_blocking);
}

// A new tensor sharing storage, geometry and the version counter, without autograd state.
// Not a view (as in PyTorch): it shares storage and version, but has no base.
Tensor Tensor::detach() const { return detail::make_alias(*this, sizes(), strides(), storage_offset()); }

Tensor Tensor::view(IntArrayRef sizes) const { return strata::view(*this, sizes); }
Tensor Tensor::reshape(IntArrayRef sizes) const { return strata::reshape(*this, sizes); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return strata::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(IntArrayRef dims) const { return strata::permute(*this, dims); }
Tensor Tensor::expand(IntArrayRef sizes) const { return strata::expand(*this, sizes); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return strata::flatten(*this, start_dim, end_dim); }
Tensor Tensor::squeeze() const { return strata::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return strata::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return strata::unsqueeze(*this, dim); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return strata::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return strata::select(*this, dim, index); }
Tensor Tensor::operator[](int64_t index) const { return strata::select(*this, 0, index); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) const {
  return strata::as_strided(*this, size, stride, storage_offset);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return strata::narrow(*this, dim, start, length);
}
tensor_list Tensor::split(int64_t split_size, int64_t dim) const { return strata::split(*this, split_size, dim); }
tensor_list Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t dim) const {
  return strata::split_with_sizes(*this, split_sizes, dim);
}
tensor_list Tensor::chunk(int64_t chunks, int64_t dim) const { return strata::chunk(*this, chunks, dim); }

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return strata::index_select(*this, dim, index); }
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return strata::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, bool sparse_grad) const {
  return strata::gather(*this, dim, index, sparse_grad);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return strata::scatter_add(*this, dim, index, src);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const { return strata::masked_fill(*this, mask, value); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return strata::masked_fill(*this, mask, value); }
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return strata::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return strata::log_softmax(*this, dim, dtype);
}

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

Tensor Tensor::neg() const { return strata::neg(*this); }
Tensor Tensor::abs() const { return strata::abs(*this); }
Tensor Tensor::sign() const { return strata::sign(*this); }
Tensor Tensor::exp() const { return strata::exp(*this); }
Tensor Tensor::log() const { return strata::log(*this); }
Tensor Tensor::sqrt() const { return strata::sqrt(*this); }
Tensor Tensor::rsqrt() const { return strata::rsqrt(*this); }
Tensor Tensor::sin() const { return strata::sin(*this); }
Tensor Tensor::cos() const { return strata::cos(*this); }
Tensor Tensor::tanh() const { return strata::tanh(*this); }
Tensor Tensor::sigmoid() const { return strata::sigmoid(*this); }
Tensor Tensor::relu() const { return strata::relu(*this); }
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return strata::clamp(*this, min, max);
}
Tensor Tensor::pow(const Tensor& exponent) const { return strata::pow(*this, exponent); }
Tensor Tensor::pow(const Scalar& exponent) const { return strata::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return strata::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return strata::minimum(*this, other); }
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const { return strata::where(condition, *this, other); }
Tensor Tensor::eq(const Tensor& other) const { return strata::eq(*this, other); }
Tensor Tensor::eq(const Scalar& other) const { return strata::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return strata::ne(*this, other); }
Tensor Tensor::ne(const Scalar& other) const { return strata::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return strata::lt(*this, other); }
Tensor Tensor::lt(const Scalar& other) const { return strata::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return strata::le(*this, other); }
Tensor Tensor::le(const Scalar& other) const { return strata::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return strata::gt(*this, other); }
Tensor Tensor::gt(const Scalar& other) const { return strata::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return strata::ge(*this, other); }
Tensor Tensor::ge(const Scalar& other) const { return strata::ge(*this, other); }
Tensor Tensor::logical_not() const { return strata::logical_not(*this); }
const Tensor& Tensor::relu_() const { return strata::relu_(*this); }
const Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return strata::clamp_(*this, min, max);
}
const Tensor& Tensor::zero_() const { return strata::zero_(*this); }
const Tensor& Tensor::fill_(const Scalar& value) const { return strata::fill_(*this, value); }

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return strata::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return strata::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::matmul(const Tensor& other) const { return strata::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& mat2) const { return strata::mm(*this, mat2); }
Tensor Tensor::bmm(const Tensor& mat2) const { return strata::bmm(*this, mat2); }
Tensor Tensor::t() const { return strata::t(*this); }
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return strata::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return strata::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return strata::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return strata::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return strata::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return strata::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return strata::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return strata::min(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return strata::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return strata::argmin(*this, dim, keepdim); }
Tensor Tensor::var(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return strata::var(*this, dims, unbiased, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return strata::std(*this, dims, unbiased, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return strata::logsumexp(*this, dims, keepdim); }
Tensor Tensor::norm(const Scalar& p) const { return strata::norm(*this, p); }

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

// Negation is the neg op (bool tensors are refused like PyTorch's neg).
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace strata
