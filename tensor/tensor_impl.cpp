// TensorImpl geometry: sizes, strides, numel and contiguity; a tensor and its storage in one
// allocation.
#include <strata/tensor/tensor_impl.h>
#include <strata/tensor/small_blocks.h>

#include <new>

namespace strata {

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes,
                       IntArrayRef strides, int64_t storage_offset)
    : storage_(std::move(storage)), dtype_(dtype) {
  STRATA_INTERNAL_ASSERT(storage_, "[TensorImpl] a tensor needs a storage");
  key_set_ = DispatchKeySet(backend_key(storage_->device().type()));
  set_sizes_and_strides(sizes, strides, storage_offset);
}

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes)
    : TensorImpl(std::move(storage), dtype, sizes, checked_numel(sizes, "TensorImpl")) {}

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes, int64_t numel)
    : storage_(std::move(storage)), dtype_(dtype) {
  STRATA_INTERNAL_ASSERT(storage_, "[TensorImpl] a tensor needs a storage");
  key_set_ = DispatchKeySet(backend_key(storage_->device().type()));
  assign_contiguous(sizes, numel);
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_data_from(const TensorImpl& other) {
  const bool has_autograd = key_set_.has(DispatchKey::Autograd);
  storage_ = other.storage_;
  dtype_ = other.dtype_;
  sizes_ = other.sizes_;
  strides_ = other.strides_;
  storage_offset_ = other.storage_offset_;
  numel_ = other.numel_;
  is_contiguous_ = other.is_contiguous_;
  key_set_ = DispatchKeySet(backend_key(storage_->device().type()));
  set_autograd_key(has_autograd);
  view_base_.reset();  // new storage: no longer a view of its old base
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  STRATA_CHECK_VALUE(sizes.size() == strides.size(), "[TensorImpl] got ", sizes.size(), " sizes ", sizes,
                     " but ", strides.size(), " strides ", strides);
  STRATA_CHECK_VALUE(storage_offset >= 0, "[TensorImpl] storage offset must be non-negative, got ",
                     storage_offset);
  checked_numel(sizes, "TensorImpl");  // throws before anything changes
  sizes_.assign(sizes);
  strides_.assign(strides);
  storage_offset_ = storage_offset;
  refresh_numel_and_contiguity();
}

namespace {
// Row-major strides for sizes, written into `strides` (no temporary DimVector).
void assign_contiguous_strides(DimVector& strides, IntArrayRef sizes) {
  strides.assign(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= sizes[i] > 1 ? sizes[i] : 1;  // like PyTorch: size 0 and 1 dims do not scale the stride
  }
}
}  // namespace

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  assign_contiguous(sizes, checked_numel(sizes, "TensorImpl"));  // throws before anything changes
}

// Row-major strides are contiguous by definition (Note [Contiguity]): nothing to recompute.
void TensorImpl::assign_contiguous(IntArrayRef sizes, int64_t numel) {
  numel_ = numel;
  sizes_.assign(sizes);
  assign_contiguous_strides(strides_, sizes);
  storage_offset_ = 0;
  is_contiguous_ = true;
}

// Note [Contiguity]
// A tensor is contiguous when walking its elements in row-major order walks memory with no
// gaps: every dim of size != 1 has the row-major stride for the dims after it. Dims of size 1
// may have any stride (they are never stepped), and a tensor with no elements is contiguous.
// This is PyTorch's definition, so views like t[:, 0:1] or unsqueeze stay contiguous.
void TensorImpl::refresh_numel_and_contiguity() {
  numel_ = 1;
  for (int64_t size : sizes_) numel_ *= size;  // validated by checked_numel
  is_contiguous_ = true;
  if (numel_ == 0) return;
  int64_t expected_stride = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected_stride) {
      is_contiguous_ = false;
      return;
    }
    expected_stride *= sizes_[d];
  }
}

void TensorImpl::set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) { autograd_meta_ = std::move(meta); }

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides;
  assign_contiguous_strides(strides, sizes);
  return strides;
}

// One pass for the common case (every size non-negative, the product fits); a size list with
// a negative or a zero size, or an overflowing product, is sorted out after it.
int64_t checked_numel(IntArrayRef sizes, const char* op) {
  int64_t numel = 1;
  bool overflow = false, negative = false;
  for (int64_t size : sizes) {
    negative |= size < 0;
    overflow |= __builtin_mul_overflow(numel, size, &numel);
  }
  if (!negative && !overflow && numel != 0) return numel;
  bool has_zero = false;
  for (int64_t size : sizes) {
    STRATA_CHECK_VALUE(size >= 0, "[", op, "] negative dimension ", size, " in size ", sizes);
    has_zero |= size == 0;
  }
  if (has_zero) return 0;
  STRATA_CHECK_VALUE(!overflow, "[", op, "] size ", sizes, " has more elements than int64 can count");
  return numel;
}

DispatchKey backend_key(DeviceType type) {
  switch (type) {
    case kCPU: return DispatchKey::CPU;
    case kCUDA: return DispatchKey::CUDA;
    case kMeta: return DispatchKey::Meta;
  }
  detail::throw_error<ValueError>("[backend_key] unknown device type ", static_cast<int>(type));
}

// ---------------------------------------------------------------------------------------
// Note [One allocation per tensor]: the shared block.

namespace {

struct SharedBlock;

class BlockStorage final : public StorageImpl {
 public:
  BlockStorage(SharedBlock* block, DataPtr data, size_t nbytes) : StorageImpl(data, nbytes), block_(block) {}
  void destroy() const override;

 private:
  SharedBlock* block_;
};

class BlockTensorImpl final : public TensorImpl {
 public:
  BlockTensorImpl(SharedBlock* block, intrusive_ptr<StorageImpl> storage, ScalarType dtype, IntArrayRef sizes,
                  int64_t numel)
      : TensorImpl(std::move(storage), dtype, sizes, numel), block_(block) {}
  void destroy() const override;

 private:
  SharedBlock* block_;
};

// Raw room for both objects; each is constructed and destroyed by hand, and the block goes
// when the second of them has been destroyed.
struct SharedBlock {
  std::atomic<uint32_t> live{2};
  alignas(BlockStorage) std::byte storage[sizeof(BlockStorage)];
  alignas(BlockTensorImpl) std::byte impl[sizeof(BlockTensorImpl)];

  bool dying_together = false;  // set by the tensor when it takes its storage with it

  void free() {
    this->~SharedBlock();
    detail::free_small_block(this, sizeof(SharedBlock));
  }
  void release_one() {  // Note [The last reference]
    if (live.load(std::memory_order_acquire) == 1 || live.fetch_sub(1, std::memory_order_acq_rel) == 1) free();
  }
};
static_assert(sizeof(SharedBlock) <= 512, "a tensor and its storage fit one pooled block");

void BlockStorage::destroy() const {
  SharedBlock* block = block_;
  const_cast<BlockStorage*>(this)->~BlockStorage();
  if (!block->dying_together) block->release_one();
}

// A tensor that holds the only reference to its own block's storage (the common case: an op's
// output that was never viewed) destroys both, and frees the block without counting down: no
// other thread can reach either object (Note [The last reference]).
void BlockTensorImpl::destroy() const {
  SharedBlock* block = block_;
  const StorageImpl* own = std::launder(reinterpret_cast<const BlockStorage*>(block->storage));
  const intrusive_ptr<StorageImpl>& storage = this->storage();
  if (storage.get() == own && storage.use_count() == 1) {
    block->dying_together = true;  // written only here: no other thread can see the storage
    const_cast<BlockTensorImpl*>(this)->~BlockTensorImpl();
    block->free();
    return;
  }
  const_cast<BlockTensorImpl*>(this)->~BlockTensorImpl();  // may destroy the storage first
  block->release_one();
}

}  // namespace

namespace {

// A TensorImpl in a pooled block (Note [Pooled small objects]), which it returns when destroyed.
class PooledTensorImpl final : public TensorImpl {
 public:
  using TensorImpl::TensorImpl;
  void destroy() const override {
    auto* self = const_cast<PooledTensorImpl*>(this);
    self->~PooledTensorImpl();
    detail::free_small_block(self, sizeof(PooledTensorImpl));
  }
};

}  // namespace

intrusive_ptr<TensorImpl> detail::make_pooled_tensor_impl(intrusive_ptr<StorageImpl> storage, ScalarType dtype,
                                                          IntArrayRef sizes, IntArrayRef strides,
                                                          int64_t storage_offset) {
  void* raw = allocate_small_block(sizeof(PooledTensorImpl));
  try {
    return intrusive_ptr<TensorImpl>::adopt(
        new (raw) PooledTensorImpl(std::move(storage), dtype, sizes, strides, storage_offset));
  } catch (...) {
    free_small_block(raw, sizeof(PooledTensorImpl));
    throw;
  }
}

intrusive_ptr<TensorImpl> make_tensor_with_storage(DataPtr data, size_t nbytes, ScalarType dtype, IntArrayRef sizes,
                                                   int64_t numel) {
  void* raw = nullptr;
  try {
    raw = detail::allocate_small_block(sizeof(SharedBlock));  // Note [Pooled small objects]
  } catch (...) {
    if (data.deleter) data.deleter(data.data, data.context, nbytes);
    throw;
  }
  auto* block = new (raw) SharedBlock;
  auto* storage = new (block->storage) BlockStorage(block, data, nbytes);  // owns data from here
  try {
    return intrusive_ptr<TensorImpl>::adopt(
        new (block->impl) BlockTensorImpl(block, intrusive_ptr<StorageImpl>::adopt(storage), dtype, sizes, numel));
  } catch (...) {
    block->release_one();  // the tensor's share; the storage released its own while unwinding
    throw;
  }
}

}  // namespace strata
