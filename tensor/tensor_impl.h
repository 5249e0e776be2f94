#pragma once
// TensorImpl: the object a Tensor handle points to. Sizes, strides, offset into a shared
// Storage, dtype, device, dispatch keys, and a slot for autograd's per-tensor data.
#include <cstdint>
#include <memory>

#include <strata/tensor/dim_vector.h>
#include <strata/tensor/dispatch_key.h>
#include <strata/tensor/scalar_type.h>
#include <strata/tensor/storage.h>

namespace strata {

// Autograd keeps its per-tensor state (requires_grad, grad, grad_fn, hooks) behind this
// interface so the tensor layer does not depend on autograd.
class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
};

// Note [One allocation per tensor]
// A TensorImpl keeps sizes and strides inline (DimVector) and shares its Storage through an
// intrusive pointer. A new tensor with a new storage (make_tensor_with_storage, which every
// empty/zeros/op output goes through) places the TensorImpl and its StorageImpl in one heap
// block with a count of two: each object runs its destructor when its own references are gone
// (a view may keep the storage alive after the tensor), and the block is freed with the second.
// So a new CPU tensor costs one heap allocation plus one block from the size-class cache.
class TensorImpl : public RefCounted {
 public:
  TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
             int64_t storage_offset = 0);
  // Contiguous strides.
  TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes);
  // Contiguous strides, for sizes whose element count `numel` the caller got from checked_numel
  // (a new tensor's sizes are checked once, not twice).
  TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes, int64_t numel);
  ~TensorImpl() override;

  IntArrayRef sizes() const { return sizes_.ref(); }
  IntArrayRef strides() const { return strides_.ref(); }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  // A view also carries its base's keys: once the base's history is rewritten by an in-place
  // op on another view, ops on this view must reach Autograd (Note [Views and their base]).
  DispatchKeySet key_set() const { return view_base_ ? key_set_ | view_base_->key_set_ : key_set_; }
  const intrusive_ptr<StorageImpl>& storage() const { return storage_; }

  // Start of this tensor's elements (storage data + offset); null for Meta.
  void* data() const {
    auto* base = static_cast<char*>(storage_->data());
    return base ? base + storage_offset_ * element_size(dtype_) : nullptr;
  }

  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  // Takes `other`'s storage, dtype and geometry, keeping this tensor's autograd state and
  // whether it carries the Autograd key (Tensor::set_data).
  void set_data_from(const TensorImpl& other);
  void set_sizes_contiguous(IntArrayRef sizes);

  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  // Note [Views and their base]
  // A tensor made by a view op (make_view) keeps its root base alive and knows it, as PyTorch's
  // `_base` does, whether or not autograd was involved; detach() makes no view. view_version
  // is the storage version when the view's history was last set: autograd regenerates a view's
  // grad_fn from its base when the version has moved since (see autograd/view.cpp).
  TensorImpl* view_base() const { return view_base_.get(); }
  const intrusive_ptr<TensorImpl>& view_base_ptr() const { return view_base_; }
  void set_view_base(intrusive_ptr<TensorImpl> base) { view_base_ = std::move(base); }
  uint32_t view_version() const { return view_version_; }
  void set_view_version(uint32_t version) { view_version_ = version; }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta);
  // Autograd calls this when requires_grad changes: the autograd key of the tensor's backend
  // (AutogradCPU for a CPU tensor...) follows it.
  void set_autograd_key(bool on) {
    key_set_ = key_set_.remove(DispatchKey::Autograd);
    if (on) key_set_ = key_set_.add(autograd_key_of((key_set_ & kBackendKeys).highest()));
  }

 private:
  void refresh_numel_and_contiguity();
  void assign_contiguous(IntArrayRef sizes, int64_t numel);  // numel: checked_numel(sizes)

  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  intrusive_ptr<StorageImpl> storage_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  intrusive_ptr<TensorImpl> view_base_;  // root base of a view; null otherwise
  uint32_t view_version_ = 0;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  DispatchKeySet key_set_;
};

// A contiguous tensor of `sizes` (numel elements, as checked_numel(sizes) returned) over a new
// storage that adopts `data` (nbytes), both in one allocation (Note [One allocation per tensor]).
// `data` is freed if this throws.
intrusive_ptr<TensorImpl> make_tensor_with_storage(DataPtr data, size_t nbytes, ScalarType dtype, IntArrayRef sizes,
                                                   int64_t numel);

// Row-major strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);
// Product of sizes; throws ValueError on a negative size.
int64_t checked_numel(IntArrayRef sizes, const char* op);
DispatchKey backend_key(DeviceType type);

}  // namespace strata
