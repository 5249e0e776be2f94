#pragma once
// ArrayRef: a non-owning view of contiguous values (sizes, strides, dims).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <vector>

#include <strata/tensor/errors.h>

namespace strata {

template <class T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& single) : data_(&single), size_(1) {}  // NOLINT: like c10::ArrayRef
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(static_cast<size_t>(end - begin)) {}
  template <class A>
  ArrayRef(const std::vector<T, A>& values) : data_(values.data()), size_(values.size()) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(std::span<const T, N> values) : data_(values.data()), size_(values.size()) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(std::span<T, N> values) : data_(values.data()), size_(values.size()) {}  // NOLINT
  // The initializer list must outlive the ArrayRef: fine for a call argument.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  constexpr ArrayRef(const std::initializer_list<T>& values)  // NOLINT
      : data_(values.begin() == values.end() ? nullptr : values.begin()), size_(values.size()) {}
#pragma GCC diagnostic pop

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[size_ - 1]; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    STRATA_CHECK_INDEX(i < size_, "[ArrayRef] index ", i, " out of range for size ", size_);
    return data_[i];
  }
  constexpr ArrayRef slice(size_t start, size_t count) const { return ArrayRef(data_ + start, count); }
  constexpr ArrayRef slice(size_t start) const { return ArrayRef(data_ + start, size_ - start); }
  std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }

  bool equals(ArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == other.data_[i])) return false;
    return true;
  }
  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = ArrayRef<int64_t>;

// Prints "[2, 3]".
template <class T>
std::ostream& operator<<(std::ostream& out, ArrayRef<T> values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out << ']';
}

}  // namespace strata
