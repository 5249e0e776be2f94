#pragma once
// DimVector: sizes or strides with room for five dimensions inline, so a typical tensor's
// shape costs no allocation. See Note [One allocation per tensor] in tensor_impl.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include <strata/tensor/array_ref.h>

namespace strata {

class DimVector {
 public:
  static constexpr size_t kInline = 5;

  DimVector() = default;
  explicit DimVector(size_t count, int64_t value = 0) { assign(count, value); }
  DimVector(IntArrayRef values) { assign(values); }  // NOLINT
  DimVector(std::initializer_list<int64_t> values) { assign(IntArrayRef(values)); }
  DimVector(const DimVector& other) { assign(other.ref()); }
  DimVector(DimVector&& other) noexcept { steal(other); }
  DimVector& operator=(const DimVector& other) {
    if (this != &other) assign(other.ref());
    return *this;
  }
  DimVector& operator=(DimVector&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  ~DimVector() { release(); }

  void assign(IntArrayRef values) {
    reserve(values.size());
    copy_dims(data_, values.data(), values.size());
    size_ = values.size();
  }
  void assign(size_t count, int64_t value) {
    reserve(count);
    std::fill(data_, data_ + count, value);
    size_ = count;
  }
  void resize(size_t count, int64_t value = 0) {
    reserve(count);
    if (count > size_) std::fill(data_ + size_, data_ + count, value);
    size_ = count;
  }
  void push_back(int64_t value) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data_[size_++] = value;
  }
  void insert(size_t position, int64_t value) {
    push_back(0);
    std::memmove(data_ + position + 1, data_ + position, (size_ - 1 - position) * sizeof(int64_t));
    data_[position] = value;
  }
  void erase(size_t position) {
    std::memmove(data_ + position, data_ + position + 1, (size_ - 1 - position) * sizeof(int64_t));
    --size_;
  }
  void clear() { size_ = 0; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t& back() { return data_[size_ - 1]; }
  IntArrayRef ref() const { return IntArrayRef(data_, size_); }
  operator IntArrayRef() const { return ref(); }  // NOLINT
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool operator==(const DimVector& other) const { return ref() == other.ref(); }

 private:
  void reserve(size_t count) {
    if (count <= capacity_) return;
    size_t capacity = std::max(count, capacity_ * 2);
    auto* heap = new int64_t[capacity];
    if (size_) std::memcpy(heap, data_, size_ * sizeof(int64_t));
    release();
    data_ = heap;
    capacity_ = capacity;
  }
  void release() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
    capacity_ = kInline;
  }
  // Copies n values that may overlap the destination. Up to kInline values are loaded before
  // any is stored, inline: shapes are copied for every new tensor and recorded op, and a libc
  // memmove call for a few bytes was 3% of a small-op loop.
  static void copy_dims(int64_t* to, const int64_t* from, size_t n) {
    int64_t v0, v1, v2, v3, v4;
    switch (n) {
      case 0: return;
      case 1: to[0] = from[0]; return;
      case 2: v0 = from[0], v1 = from[1]; to[0] = v0, to[1] = v1; return;
      case 3: v0 = from[0], v1 = from[1], v2 = from[2]; to[0] = v0, to[1] = v1, to[2] = v2; return;
      case 4:
        v0 = from[0], v1 = from[1], v2 = from[2], v3 = from[3];
        to[0] = v0, to[1] = v1, to[2] = v2, to[3] = v3;
        return;
      case 5:
        v0 = from[0], v1 = from[1], v2 = from[2], v3 = from[3], v4 = from[4];
        to[0] = v0, to[1] = v1, to[2] = v2, to[3] = v3, to[4] = v4;
        return;
      default: std::memmove(to, from, n * sizeof(int64_t));
    }
  }
  static_assert(kInline == 5, "copy_dims copies up to kInline values inline");

  void steal(DimVector& other) {
    if (other.data_ == other.inline_) {
      copy_dims(inline_, other.inline_, other.size_);
      data_ = inline_;
      capacity_ = kInline;
    } else {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = kInline;
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
  int64_t inline_[kInline];
};

}  // namespace strata
