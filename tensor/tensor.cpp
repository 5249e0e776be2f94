// Tensor handle methods that need no ops: geometry, data access, item, from_blob, views.
#include <strata/tensor/tensor.h>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/host_read.h>
#include <strata/tensor/small_blocks.h>
#include <strata/tensor/view_hooks.h>

#include <atomic>
#include <utility>

namespace strata {

namespace {
// Tensor::size and Tensor::stride index real dims, so unlike wrap_dim a 0-d tensor has none.
int64_t wrap_existing_dim(int64_t dim, int64_t ndim, const char* op) {
  STRATA_CHECK_INDEX(ndim > 0, "[", op, "] dimension ", dim, " out of range for a 0-d tensor (it has no dimensions)");
  return wrap_dim(dim, ndim, op);
}
}  // namespace

int64_t Tensor::size(int64_t dim) const {
  TensorImpl* impl = checked_impl();
  return impl->sizes()[static_cast<size_t>(wrap_existing_dim(dim, impl->dim(), "size"))];
}

int64_t Tensor::stride(int64_t dim) const {
  TensorImpl* impl = checked_impl();
  return impl->strides()[static_cast<size_t>(wrap_existing_dim(dim, impl->dim(), "stride"))];
}

void* Tensor::data_ptr() const {
  TensorImpl* impl = checked_impl();
  STRATA_CHECK(!impl->device().is_meta(), "[data_ptr] a Meta tensor has no data (shape ", impl->sizes(), ", ",
               impl->dtype(), ")");
  return impl->data();
}

void Tensor::check_data_ptr_type(ScalarType requested) const {
  ScalarType actual = dtype();
  STRATA_CHECK_TYPE(requested == actual, "[data_ptr] requested ", requested, " but the tensor is ", actual);
}

namespace detail {
namespace {
[[gnu::tls_model("initial-exec")]] thread_local HostReadObserver host_read_observer = nullptr;
}
HostReadObserver set_host_read_observer(HostReadObserver observer) {
  return std::exchange(host_read_observer, observer);
}
void notify_host_read(const char* what) {
  if (host_read_observer != nullptr) host_read_observer(what);
}
}  // namespace detail

Scalar Tensor::item() const {
  TensorImpl* impl = checked_impl();
  detail::notify_host_read("item");
  STRATA_CHECK_VALUE(impl->numel() == 1, "[item] a Tensor with ", impl->numel(),
                     " elements cannot be converted to a Scalar");
  Device device = impl->device();
  STRATA_CHECK(!device.is_meta(), "[item] a Meta tensor has no data (shape ", impl->sizes(), ", ", impl->dtype(),
               ")");
  const void* data = impl->data();
  alignas(8) unsigned char host_copy[8];
  if (!device.is_cpu()) {  // one element comes to the host; the copy waits for the device
    const DeviceHooks& hooks = detail::require_device_hooks(device.type(), "item");
    hooks.copy_bytes(host_copy, Device(kCPU), data, device, static_cast<size_t>(strata::element_size(impl->dtype())), nullptr,
                     /*non_blocking=*/false);
    data = host_copy;
  }
  return visit_dtype(impl->dtype(), [&]<class T>() { return Scalar(*static_cast<const T*>(data)); });
}

// See Note [data and set_data] in autograd/variable.cpp, where set_data lives.
Tensor Tensor::data() const {
  TensorImpl* impl = checked_impl();
  return detail::make_alias(*this, impl->sizes(), impl->strides(), impl->storage_offset());
}

void Tensor::throw_undefined() {
  detail::throw_error<Error>("[Tensor] called a method on an undefined tensor");
}

namespace {
// Bytes spanned by a strided tensor whose strides are non-negative: last element + 1.
size_t spanned_bytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, int64_t numel) {
  if (numel == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return static_cast<size_t>((last + 1) * element_size(dtype));
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options) {
  return from_blob(data, sizes, contiguous_strides(sizes), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  return from_blob(data, sizes, strides, std::function<void(void*)>(), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter, TensorOptions options) {
  return from_blob(data, sizes, contiguous_strides(sizes), deleter, options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const std::function<void(void*)>& deleter,
                 TensorOptions options) {
  Device device = options.device();
  STRATA_CHECK_VALUE(device.is_cpu(), "[from_blob] only CPU memory can be wrapped, got device ", device);
  Tensor result = detail::wrap_external(data, sizes, strides, options.dtype(), device, deleter, "from_blob");
  if (options.requires_grad()) detail::set_requires_grad(result, true);
  return result;
}

namespace detail {

namespace {
std::atomic<RequiresGradHook> requires_grad_hook{nullptr};
}  // namespace

void set_requires_grad_hook(RequiresGradHook hook) { requires_grad_hook.store(hook, std::memory_order_release); }

void set_requires_grad(const Tensor& tensor, bool requires_grad) {
  RequiresGradHook hook = requires_grad_hook.load(std::memory_order_acquire);
  STRATA_INTERNAL_ASSERT(hook, "[requires_grad_] autograd has not registered its requires_grad hook");
  hook(tensor, requires_grad);
}

// Note [External memory]
// from_blob and from_dlpack wrap memory strata does not own in a StorageImpl built with its
// external-memory constructor, whose `on_release` runs exactly once, when the last tensor or
// view sharing the storage dies. Every check runs before the storage exists, so a call that
// throws never calls the deleter: the caller still owns the memory.
Tensor wrap_external(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                     std::function<void(void*)> deleter, const char* op) {
  int64_t numel = checked_numel(sizes, op);
  STRATA_CHECK_VALUE(sizes.size() == strides.size(), "[", op, "] got ", sizes.size(), " sizes ", sizes, " but ",
                     strides.size(), " strides ", strides);
  for (int64_t stride : strides)
    STRATA_CHECK_VALUE(stride >= 0, "[", op, "] strides must be non-negative, got ", strides);
  STRATA_CHECK_VALUE(data != nullptr || numel == 0, "[", op, "] data is null but size ", sizes, " has ", numel,
                     " elements");
  size_t nbytes = spanned_bytes(sizes, strides, dtype, numel);
  auto storage = make_intrusive<StorageImpl>(data, nbytes, device, std::move(deleter));
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes, strides));
}

}  // namespace detail

namespace detail {

Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device) {
  int64_t numel = checked_numel(sizes, "empty");
  int64_t nbytes = 0;
  STRATA_CHECK_VALUE(!__builtin_mul_overflow(numel, element_size(dtype), &nbytes), "[empty] size ", sizes,
                     " of ", dtype, " needs more bytes than int64 can count");
  const DataPtr data = allocate_storage_data(static_cast<size_t>(nbytes), device);
  return Tensor(make_tensor_with_storage(data, static_cast<size_t>(nbytes), dtype, sizes, numel));
}

namespace {
std::atomic<ViewMadeHook> view_made_hook{nullptr};
}  // namespace

void set_view_made_hook(ViewMadeHook hook) { view_made_hook.store(hook, std::memory_order_release); }

// Note [View bounds]
// make_view checks that every element of the new geometry lies inside the base's storage, so a
// wrong view kernel (or a user's as_strided-like call) fails with an error instead of reading
// memory it does not own. The check costs one pass over the dims.
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  Tensor view = make_alias(base, sizes, strides, storage_offset);
  // See Note [Views and their base]: a view of a view shares the root.
  const intrusive_ptr<TensorImpl>& root = base.impl()->view_base() ? base.impl()->view_base_ptr() : base.impl_ptr();
  view.impl()->set_view_base(root);
  view.impl()->set_view_version(base.impl()->version());
  if (const AutogradMetaInterface* meta = root->autograd_meta(); meta && meta->requires_grad())
    if (ViewMadeHook hook = view_made_hook.load(std::memory_order_acquire)) hook(view);
  return view;
}

Tensor make_alias(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  TensorImpl* base_impl = base.impl();
  STRATA_CHECK(base_impl, "[make_view] the base tensor is undefined");
  auto impl = make_pooled_tensor_impl(base_impl->storage(), base_impl->dtype(), sizes, strides, storage_offset);
  if (impl->numel() > 0) {
    int64_t lowest = storage_offset, highest = storage_offset;
    for (size_t d = 0; d < sizes.size(); ++d) (strides[d] < 0 ? lowest : highest) += (sizes[d] - 1) * strides[d];
    int64_t capacity = static_cast<int64_t>(base_impl->storage()->nbytes()) / element_size(base_impl->dtype());
    STRATA_CHECK_VALUE(lowest >= 0 && highest < capacity, "[make_view] a view with size ", sizes, ", stride ",
                       strides, " and offset ", storage_offset, " reaches elements [", lowest, ", ", highest,
                       "] outside the storage of ", capacity, " elements");
  }
  return Tensor(std::move(impl));
}

}  // namespace detail

Tensor Tensor::_base() const {
  TensorImpl* base = checked_impl()->view_base();
  return base ? Tensor(checked_impl()->view_base_ptr()) : Tensor();
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t range = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts 0 and -1, like PyTorch
  STRATA_CHECK_INDEX(dim >= -range && dim < range, "[", op, "] dimension ", dim,
                     " out of range (expected to be in range of [", -range, ", ", range - 1, "])");
  return dim < 0 ? dim + range : dim;
}

}  // namespace strata
