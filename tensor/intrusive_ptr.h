#pragma once
// Intrusive reference counting: the count lives in the object, so a handle is one pointer
// and copying it is one atomic increment.
#include <atomic>
#include <cstdint>
#include <utility>

namespace strata {

// Note [The last reference]
// Dropping a reference is a locked read-modify-write, which costs several nanoseconds even
// uncontended, and a tiny op drops a handful (its output, the output's storage, their shared
// block). A reference can only be copied from one a thread already holds, so a holder that
// reads a count of one holds the only reference: no other thread can add one, and the object
// can be destroyed without the decrement. The load is an acquire, pairing with the release in
// the fetch_sub of every thread that dropped its reference before, so their writes to the
// object happen before its destruction, as with the decrement. (The count of a destroyed
// object is left at one; nothing reads it.)
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  void retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // Returns true when this was the last reference. See Note [The last reference].
  bool release() const {
    return refcount_.load(std::memory_order_acquire) == 1 || refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }
  // Runs when the last reference goes. Objects that share one allocation with others (a
  // TensorImpl made with its Storage, Note [One allocation per tensor]) override it.
  virtual void destroy() const { delete this; }

 private:
  mutable std::atomic<uint32_t> refcount_{1};
};

// Owns one reference. make_intrusive creates an object with a count of one.
template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  intrusive_ptr(std::nullptr_t) {}  // NOLINT
  // Adopts a reference the caller already holds (from `new T`).
  static intrusive_ptr adopt(T* raw) {
    intrusive_ptr result;
    result.ptr_ = raw;
    return result;
  }
  // Adds a reference to an object someone else owns.
  static intrusive_ptr reclaim_copy(T* raw) {
    if (raw) raw->retain();
    return adopt(raw);
  }
  intrusive_ptr(const intrusive_ptr& other) : ptr_(other.ptr_) {
    if (ptr_) ptr_->retain();
  }
  intrusive_ptr(intrusive_ptr&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <class U>
  intrusive_ptr(intrusive_ptr<U>&& other) noexcept : ptr_(other.release_ownership()) {}  // NOLINT
  intrusive_ptr& operator=(const intrusive_ptr& other) {
    intrusive_ptr(other).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& other) noexcept {
    intrusive_ptr(std::move(other)).swap(*this);
    return *this;
  }
  ~intrusive_ptr() { reset(); }

  void reset() {
    if (ptr_ && ptr_->release()) ptr_->destroy();
    ptr_ = nullptr;
  }
  T* release_ownership() { return std::exchange(ptr_, nullptr); }
  void swap(intrusive_ptr& other) noexcept { std::swap(ptr_, other.ptr_); }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  uint32_t use_count() const { return ptr_ ? ptr_->use_count() : 0; }
  bool operator==(const intrusive_ptr& other) const { return ptr_ == other.ptr_; }

 private:
  T* ptr_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>::adopt(new T(std::forward<Args>(args)...));
}

}  // namespace strata
