#pragma once
// Tensor: a reference-counted handle to a TensorImpl. Copies share the tensor; every method
// is const. Methods that run ops are defined in ops/tensor_methods.cpp and dispatch like the
// free functions in ops/ops.h.
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include <strata/tensor/array_ref.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/scalar.h>
#include <strata/tensor/tensor_impl.h>
#include <strata/tensor/tensor_options.h>

namespace strata {

class Stream;

class Tensor;
using tensor_list = std::vector<Tensor>;
namespace autograd {
class Node;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  uint32_t use_count() const { return impl_.use_count(); }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  IntArrayRef sizes() const { return checked_impl()->sizes(); }
  IntArrayRef strides() const { return checked_impl()->strides(); }
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return checked_impl()->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return checked_impl()->numel(); }
  int64_t storage_offset() const { return checked_impl()->storage_offset(); }
  ScalarType dtype() const { return checked_impl()->dtype(); }
  ScalarType scalar_type() const { return dtype(); }
  Device device() const { return checked_impl()->device(); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  int64_t element_size() const { return strata::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const { return checked_impl()->is_contiguous(); }
  // Whether the strides lay the elements out densely in `memory_format`'s order of dims
  // (ChannelsLast: NHWC). Preserve is not a layout and throws ValueError.
  bool is_contiguous(MemoryFormat memory_format) const;
  bool is_non_overlapping_and_dense() const;
  // The memory format the strides follow: ChannelsLast(3d) for 4-d (5-d) tensors laid out
  // channels last, else Contiguous (as in LibTorch).
  MemoryFormat suggest_memory_format() const;
  Layout layout() const { return kStrided; }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_meta() const { return device().is_meta(); }
  bool is_floating_point() const { return strata::is_floating_point(dtype()); }
  DispatchKeySet key_set() const { return checked_impl()->key_set(); }
  uint32_t version() const { return checked_impl()->version(); }

  // Start of the elements. Throws for Meta tensors (they have no data).
  void* data_ptr() const;
  // Throws TypeError unless T is this tensor's dtype.
  template <class T>
  T* data_ptr() const {
    check_data_ptr_type(scalar_type_of<T>);
    return static_cast<T*>(data_ptr());
  }
  // The single value of a one-element tensor, converted to T from any dtype. Throws ValueError
  // when an integral T cannot hold it (NaN, infinities, out of range).
  Scalar item() const;
  template <class T>
  T item() const {
    return item().to<T>("item");
  }

  // Conversions and copies.
  // As in LibTorch: non_blocking lets a copy between host and device return before it is done
  // (ordered on the current stream); copy forces a new tensor even when nothing changes.
  // memory_format: the strides of a new tensor; unset (Preserve) keeps dense strides as they
  // are, as in LibTorch. Nothing changes and no copy is made when the tensor already fits.
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor cpu() const;
  Tensor cuda() const;  // to the current CUDA device
  // A copy of this CPU tensor in page-locked memory, which CUDA copies read and write
  // asynchronously (to(kCUDA, non_blocking=true)); the tensor itself when already pinned. Needs
  // the CUDA backend and a device (throws Error saying why not).
  Tensor pin_memory() const;
  bool is_pinned() const;  // false without a CUDA backend
  // Marks this tensor's memory as used by the work queued on `stream` so far, so that it is not
  // reused for another tensor before that work finishes (for tensors made on one stream and
  // used on another). A no-op for CPU and Meta tensors.
  void record_stream(const Stream& stream) const;
  // New tensors of `sizes` with this tensor's dtype and device unless `options` set them
  // (LibTorch's new_*): not views, no grad unless the options ask for it.
  Tensor new_empty(IntArrayRef sizes, TensorOptions options = {}) const;
  Tensor new_zeros(IntArrayRef sizes, TensorOptions options = {}) const;
  Tensor new_ones(IntArrayRef sizes, TensorOptions options = {}) const;
  Tensor new_full(IntArrayRef sizes, const Scalar& fill_value, TensorOptions options = {}) const;
  // This tensor when it already is in `memory_format` (a dense copy in it otherwise).
  Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  // A copy with the strides of `memory_format`; unset (Preserve) keeps dense strides.
  Tensor clone(std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false,  // other's dtype and device
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  // A bare device type is the current device of that type (Note [Bare device types]).
  Tensor to(DeviceType device, ScalarType dtype, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  // non_blocking: between the CPU and a device, the copy may finish after this returns (it is
  // ordered on the device's current stream); see Tensor::pin_memory.
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  Tensor detach() const;
  // Whether a view op made this tensor, and the root tensor it views (undefined otherwise);
  // a view of a view has the root as its base. See Note [Views and their base].
  bool is_view() const { return checked_impl()->view_base() != nullptr; }
  Tensor _base() const;
  // LibTorch's variable.data(): an alias of the same storage and geometry without autograd
  // history (requires_grad false). See Note [data and set_data] in autograd/variable.cpp.
  Tensor data() const;
  // Makes this tensor use new_data's storage, dtype and geometry, keeping its autograd identity
  // (requires_grad, grad, hooks: the same leaf). Throws for an undefined new_data, for mixing
  // Meta with real devices, and for a non-floating new_data when this tensor requires grad.
  void set_data(const Tensor& new_data) const;

  // Views.
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  // t[i] is t.select(0, i), as in LibTorch.
  Tensor operator[](int64_t index) const;
  Tensor as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // Indexing.
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor gather(int64_t dim, const Tensor& index, bool sparse_grad = false) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;

  // Neural-network functions.
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // Arithmetic.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(const Scalar& other) const;
  const Tensor& div_(const Tensor& other) const;
  const Tensor& div_(const Scalar& other) const;

  // Pointwise math, activations and comparisons (see ops/ops.h).
  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor clamp(const std::optional<Scalar>& min = std::nullopt, const std::optional<Scalar>& max = std::nullopt) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  // self where condition holds, other elsewhere (ATen's Tensor.where).
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_not() const;
  const Tensor& relu_() const;
  const Tensor& clamp_(const std::optional<Scalar>& min = std::nullopt,
                       const std::optional<Scalar>& max = std::nullopt) const;
  const Tensor& zero_() const;
  const Tensor& fill_(const Scalar& value) const;

  // Autograd (defined in autograd/variable.cpp). See ../shared/API.md, "Autograd".
  bool requires_grad() const;
  // Throws TypeError for integer and bool tensors, and for non-leaf tensors when turning it off.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  // The gradient's handle (undefined until a backward reaches this tensor); in-place
  // changes to it change the gradient.
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  bool is_leaf() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  uint32_t output_nr() const;
  // Keeps .grad for a non-leaf tensor after backward.
  void retain_grad() const;
  bool retains_grad() const;
  // With `inputs`, only those tensors' .grad accumulate (non-leaf inputs keep theirs as
  // retain_grad() would); an empty list given explicitly is an error, as in LibTorch.
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false) const;
  void backward(const Tensor& gradient, bool retain_graph, bool create_graph, const std::vector<Tensor>& inputs) const;
  // hook(grad) runs when this tensor's gradient is computed; a defined result replaces it.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook) const;
  template <class F>
    requires std::is_void_v<std::invoke_result_t<F, const Tensor&>>
  unsigned register_hook(F&& hook) const {
    return register_hook(std::function<Tensor(const Tensor&)>([hook = std::forward<F>(hook)](const Tensor& grad) mutable {
      hook(grad);
      return Tensor();
    }));
  }
  void remove_hook(unsigned handle) const;
  // Detaches in place: this tensor leaves the graph.
  const Tensor& detach_() const;

  // Reductions and linear algebra.
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // t.var() reduces every dim; t.var(1) and t.var({0, 1}) reduce those dims (unbiased).
  Tensor var(IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& mat2) const;
  Tensor bmm(const Tensor& mat2) const;
  Tensor t() const;

 private:
  TensorImpl* checked_impl() const {
    if (!impl_) [[unlikely]] throw_undefined();
    return impl_.get();
  }
  [[noreturn]] static void throw_undefined();
  void check_data_ptr_type(ScalarType requested) const;

  intrusive_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);

// Prints as PyTorch's repr does, suffixes included (Note [Tensor printing] in tensor/printing.cpp).
std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Wraps memory the caller owns: no copy, no ownership (the memory must outlive the tensor).
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
// Wraps memory and takes it over: deleter(data) runs exactly once, when the storage dies (the
// last tensor or view sharing it is destroyed). Not called when from_blob throws.
Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const std::function<void(void*)>& deleter,
                 TensorOptions options = {});

namespace detail {
// A new tensor with fresh storage and contiguous strides (no dispatch; for kernels).
Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device);
// A tensor over external memory on any device (from_blob, from_dlpack); `deleter` (may be
// empty) runs once when the storage dies. See Note [External memory] in tensor.cpp.
Tensor wrap_external(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                     std::function<void(void*)> deleter, const char* op);
// A tensor sharing `base`'s storage with new geometry (for view kernels); it records base's
// root as its view base (Note [Views and their base]).
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
// The same geometry without recording a base (detach, internal aliases).
Tensor make_alias(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
// Tensor::requires_grad_ for tensor-level code (from_blob's TensorOptions::requires_grad):
// tensor/ does not link to autograd/, so autograd registers the function when it loads.
// See Note [Layers] in cmake/StrataLayers.cmake.
using RequiresGradHook = void (*)(const Tensor& tensor, bool requires_grad);
void set_requires_grad_hook(RequiresGradHook hook);
void set_requires_grad(const Tensor& tensor, bool requires_grad);
}  // namespace detail

// Dimension index wrapping: -1 is the last dim. Throws IndexError naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace strata
