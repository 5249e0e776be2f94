#pragma once
// SmallVector<T, N>: a vector that keeps its first N elements inside the object and moves to
// the heap only past them. The autograd tape uses it so that recording an op costs one Node
// allocation, not one per edge, input and output list (Note [Recording allocations] in
// autograd/function.h). DimVector is the trivially-copyable int64_t special case, kept apart.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace strata {

template <class T, size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one element inline");

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  SmallVector() noexcept = default;
  SmallVector(std::initializer_list<T> values) { append(values.begin(), values.end()); }
  template <class It>
  SmallVector(It first, It last) {
    append(first, last);
  }
  SmallVector(const SmallVector& other) { append(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) { take(std::move(other)); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      clear();
      free_heap();
      take(std::move(other));
    }
    return *this;
  }
  ~SmallVector() {
    clear();
    free_heap();
  }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }
  bool is_inline() const noexcept { return data_ == inline_data(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at: index out of range");
    return data_[i];
  }
  const T& at(size_t i) const { return const_cast<SmallVector*>(this)->at(i); }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }

  void reserve(size_t wanted) {
    if (wanted > capacity_) grow_to(wanted);
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      // Build the element first: args may refer to an element of this vector.
      T value(std::forward<Args>(args)...);
      grow_to(capacity_ * 2);
      ::new (static_cast<void*>(data_ + size_)) T(std::move(value));
    } else {
      ::new (static_cast<void*>(data_ + size_)) T(std::forward<Args>(args)...);
    }
    return data_[size_++];
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() noexcept { data_[--size_].~T(); }
  void resize(size_t count) {
    if (count < size_) {
      std::destroy(data_ + count, data_ + size_);
    } else {
      reserve(count);
      std::uninitialized_value_construct(data_ + size_, data_ + count);
    }
    size_ = count;
  }
  void clear() noexcept {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }
  iterator erase(const_iterator position) {
    T* at = data_ + (position - data_);
    std::move(at + 1, end(), at);
    pop_back();
    return at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* inline_data() const noexcept { return std::launder(reinterpret_cast<const T*>(storage_)); }

  template <class It>
  void append(It first, It last) {
    reserve(size_ + static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) ::new (static_cast<void*>(data_ + size_++)) T(*first);
  }
  void grow_to(size_t wanted) {
    const size_t capacity = std::max(wanted, capacity_ * 2);
    T* fresh = std::allocator<T>().allocate(capacity);
    std::uninitialized_move(data_, data_ + size_, fresh);
    std::destroy(data_, data_ + size_);
    free_heap();
    data_ = fresh;
    capacity_ = capacity;
  }
  void free_heap() noexcept {
    if (!is_inline()) std::allocator<T>().deallocate(data_, capacity_);
    data_ = inline_data();
    capacity_ = N;
  }
  // Leaves `other` empty; this vector must be empty and inline.
  void take(SmallVector&& other) {
    if (other.is_inline()) {
      std::uninitialized_move(other.begin(), other.end(), data_);
      size_ = other.size_;
      other.clear();
    } else {
      data_ = std::exchange(other.data_, other.inline_data());
      capacity_ = std::exchange(other.capacity_, N);
      size_ = std::exchange(other.size_, 0);
    }
  }

  alignas(T) std::byte storage_[N * sizeof(T)];
  T* data_ = inline_data();
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace strata
