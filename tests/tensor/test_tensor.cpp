// Tests for tensor/tensor.cpp: the handle's geometry queries, data access, item, from_blob,
// make_empty, make_view and wrap_dim. Builds tensors without ops.
#include <doctest/doctest.h>

#include <strata/tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace strata;

namespace {

// A contiguous CPU tensor of `dtype` holding `values`.
Tensor filled(IntArrayRef sizes, ScalarType dtype, const std::vector<double>& values) {
  Tensor tensor = detail::make_empty(sizes, dtype, Device(kCPU));
  REQUIRE(static_cast<size_t>(tensor.numel()) == values.size());
  visit_dtype(dtype, [&]<class T>() {
    T* data = tensor.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<T>(static_cast<compute_type_t<T>>(values[i]));
  });
  return tensor;
}

}  // namespace

TEST_CASE("tensor: make_empty gives a contiguous tensor with fresh storage") {
  Tensor tensor = detail::make_empty({2, 3}, kFloat64, Device(kCPU));
  CHECK(tensor.defined());
  CHECK(tensor.sizes() == IntArrayRef{2, 3});
  CHECK(tensor.strides() == IntArrayRef{3, 1});
  CHECK(tensor.dim() == 2);
  CHECK(tensor.numel() == 6);
  CHECK(tensor.dtype() == kFloat64);
  CHECK(tensor.element_size() == 8);
  CHECK(tensor.nbytes() == 48);
  CHECK(tensor.is_contiguous());
  CHECK(tensor.is_cpu());
  CHECK(tensor.is_floating_point());
  CHECK(tensor.impl()->storage()->nbytes() == 48);
  CHECK(tensor.options().dtype() == kFloat64);
  CHECK(tensor.key_set().has(DispatchKey::CPU));
  Tensor meta = detail::make_empty({4, 5}, kInt32, Device(kMeta));
  CHECK(meta.is_meta());
  CHECK(meta.impl()->storage()->nbytes() == 80);
  CHECK_THROWS_WITH_AS(detail::make_empty({3, -2}, kFloat32, Device(kCPU)),
                       "[empty] negative dimension -2 in size [3, -2]", ValueError);
  CHECK_THROWS_AS(detail::make_empty({int64_t{1} << 61, 8}, kFloat64, Device(kMeta)), ValueError);
}

TEST_CASE("tensor: handles share the tensor") {
  Tensor tensor = detail::make_empty({2}, kFloat32, Device(kCPU));
  Tensor copy = tensor;
  CHECK(copy.is_same(tensor));
  CHECK(tensor.use_count() == 2);
  CHECK_FALSE(detail::make_empty({2}, kFloat32, Device(kCPU)).is_same(tensor));
}

TEST_CASE("tensor: size and stride wrap negative dims") {
  Tensor tensor = detail::make_empty({2, 3, 4}, kFloat32, Device(kCPU));
  CHECK(tensor.size(0) == 2);
  CHECK(tensor.size(-1) == 4);
  CHECK(tensor.size(-3) == 2);
  CHECK(tensor.stride(1) == 4);
  CHECK(tensor.stride(-1) == 1);
  CHECK_THROWS_WITH_AS(tensor.size(3), "[size] dimension 3 out of range (expected to be in range of [-3, 2])",
                       IndexError);
  CHECK_THROWS_WITH_AS(tensor.stride(-4), "[stride] dimension -4 out of range (expected to be in range of [-3, 2])",
                       IndexError);
  Tensor scalar = detail::make_empty({}, kFloat32, Device(kCPU));
  CHECK_THROWS_WITH_AS(scalar.size(0), "[size] dimension 0 out of range for a 0-d tensor (it has no dimensions)",
                       IndexError);
}

TEST_CASE("tensor: wrap_dim") {
  CHECK(wrap_dim(0, 2, "op") == 0);
  CHECK(wrap_dim(-1, 2, "op") == 1);
  CHECK(wrap_dim(-2, 2, "op") == 0);
  CHECK(wrap_dim(0, 0, "op") == 0);   // a 0-d tensor accepts 0 and -1, like PyTorch
  CHECK(wrap_dim(-1, 0, "op") == 0);
  CHECK_THROWS_WITH_AS(wrap_dim(5, 2, "sum"), "[sum] dimension 5 out of range (expected to be in range of [-2, 1])",
                       IndexError);
  CHECK_THROWS_WITH_AS(wrap_dim(-3, 2, "sum"), "[sum] dimension -3 out of range (expected to be in range of [-2, 1])",
                       IndexError);
  CHECK_THROWS_WITH_AS(wrap_dim(1, 0, "softmax"),
                       "[softmax] dimension 1 out of range (expected to be in range of [-1, 0])", IndexError);
}

TEST_CASE("tensor: data_ptr checks the element type and the device") {
  Tensor tensor = filled({2, 2}, kFloat32, {1, 2, 3, 4});
  CHECK(tensor.data_ptr() == tensor.impl()->storage()->data());
  CHECK(tensor.data_ptr<float>()[3] == 4.0f);
  CHECK_THROWS_WITH_AS(tensor.data_ptr<double>(), "[data_ptr] requested Float64 but the tensor is Float32", TypeError);
  CHECK_THROWS_AS(tensor.data_ptr<int32_t>(), TypeError);
  Tensor meta = detail::make_empty({2, 3}, kFloat32, Device(kMeta));
  CHECK_THROWS_WITH_AS(meta.data_ptr(), "[data_ptr] a Meta tensor has no data (shape [2, 3], Float32)", Error);
  CHECK_THROWS_AS(meta.data_ptr<float>(), Error);
}

TEST_CASE("tensor: methods on an undefined tensor throw Error") {
  Tensor undefined;
  CHECK_FALSE(undefined.defined());
  CHECK(undefined.use_count() == 0);
  CHECK_THROWS_WITH_AS(undefined.sizes(), "[Tensor] called a method on an undefined tensor", Error);
  CHECK_THROWS_AS(undefined.dim(), Error);
  CHECK_THROWS_AS(undefined.data_ptr(), Error);
  CHECK_THROWS_AS(undefined.item(), Error);
  CHECK_THROWS_AS(undefined.size(0), Error);
  CHECK_THROWS_AS(undefined.dtype(), Error);
}

TEST_CASE("tensor: item reads one element of any dtype") {
  CHECK(filled({}, kFloat32, {2.5}).item<float>() == 2.5f);
  CHECK(filled({1}, kFloat64, {-0.125}).item<double>() == -0.125);
  CHECK(filled({1, 1}, kInt64, {-7}).item<int64_t>() == -7);
  CHECK(filled({}, kInt32, {123456}).item<int>() == 123456);
  CHECK(filled({}, kUInt8, {200}).item<int64_t>() == 200);
  CHECK(filled({}, kBool, {1}).item<bool>());
  CHECK(filled({}, kFloat16, {1.5}).item<float>() == 1.5f);
  CHECK(filled({}, kBFloat16, {-3}).item<double>() == -3.0);
  CHECK(filled({}, kFloat64, {2.75}).item<int64_t>() == 2);  // converts, like item<T>() in LibTorch
  Scalar integral = filled({}, kInt64, {5}).item();
  CHECK(integral.is_integral());
  CHECK(integral.to_long() == 5);
  CHECK(filled({}, kBool, {0}).item().is_bool());
  CHECK(filled({}, kFloat16, {0.5}).item().is_floating_point());
}

TEST_CASE("tensor: item honours the storage offset of a view") {
  Tensor base = filled({4}, kInt32, {10, 20, 30, 40});
  Tensor third = detail::make_view(base, {}, {}, 2);
  CHECK(third.item<int>() == 30);
  CHECK(third.storage_offset() == 2);
}

TEST_CASE("tensor: item errors") {
  CHECK_THROWS_WITH_AS(filled({2, 3}, kFloat32, {1, 2, 3, 4, 5, 6}).item(),
                       "[item] a Tensor with 6 elements cannot be converted to a Scalar", ValueError);
  CHECK_THROWS_WITH_AS(detail::make_empty({0}, kFloat32, Device(kCPU)).item(),
                       "[item] a Tensor with 0 elements cannot be converted to a Scalar", ValueError);
  CHECK_THROWS_WITH_AS(detail::make_empty({}, kFloat32, Device(kMeta)).item(),
                       "[item] a Meta tensor has no data (shape [], Float32)", Error);
}

TEST_CASE("tensor: from_blob wraps memory without copying or owning it") {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  int64_t live_before = cpu_live_bytes();
  {
    Tensor tensor = from_blob(buffer, {2, 3});
    CHECK(cpu_live_bytes() == live_before);
    CHECK(tensor.data_ptr() == buffer);
    CHECK(tensor.dtype() == kFloat32);
    CHECK(tensor.strides() == IntArrayRef{3, 1});
    CHECK(tensor.impl()->storage()->nbytes() == sizeof(buffer));
    tensor.data_ptr<float>()[4] = 40;
    buffer[0] = -1;
    CHECK(tensor.data_ptr<float>()[0] == -1);
  }
  CHECK(buffer[4] == 40);  // the buffer outlives the tensor untouched
  int64_t longs[3] = {7, 8, 9};
  Tensor typed = from_blob(longs, {3}, kInt64);
  CHECK(detail::make_view(typed, {}, {}, 2).item<int64_t>() == 9);
}

TEST_CASE("tensor: from_blob with strides") {
  double buffer[6] = {0, 1, 2, 3, 4, 5};
  Tensor transposed = from_blob(buffer, {3, 2}, {1, 3}, kFloat64);
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(transposed.stride(0) == 1);
  CHECK(transposed.impl()->storage()->nbytes() == sizeof(buffer));
  Tensor every_other = from_blob(buffer, {3}, {2}, kFloat64);
  CHECK(every_other.impl()->storage()->nbytes() == 5 * sizeof(double));
  CHECK(detail::make_view(every_other, {}, {}, 4).item<double>() == 4.0);
}

TEST_CASE("tensor: from_blob errors") {
  float buffer[4] = {};
  CHECK_THROWS_WITH_AS(from_blob(nullptr, {2, 2}), "[from_blob] data is null but size [2, 2] has 4 elements",
                       ValueError);
  CHECK(from_blob(nullptr, {0, 3}).numel() == 0);  // no elements: null is fine
  CHECK_THROWS_WITH_AS(from_blob(buffer, {2, -2}), "[from_blob] negative dimension -2 in size [2, -2]", ValueError);
  CHECK_THROWS_WITH_AS(from_blob(buffer, {2, 2}, {1}), "[from_blob] got 2 sizes [2, 2] but 1 strides [1]",
                       ValueError);
  CHECK_THROWS_WITH_AS(from_blob(buffer, {2}, {-1}), "[from_blob] strides must be non-negative, got [-1]",
                       ValueError);
  CHECK_THROWS_WITH_AS(from_blob(buffer, {4}, Device(kMeta)),
                       "[from_blob] only CPU memory can be wrapped, got device meta", ValueError);
  CHECK(from_blob(buffer, {4}, TensorOptions().requires_grad(true)).requires_grad());
}

TEST_CASE("tensor: make_view shares storage and version, with new geometry") {
  Tensor base = filled({2, 3}, kFloat32, {0, 1, 2, 3, 4, 5});
  Tensor transposed = detail::make_view(base, {3, 2}, {1, 3}, 0);
  CHECK(transposed.impl()->storage() == base.impl()->storage());
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(transposed.sizes() == IntArrayRef{3, 2});
  Tensor column = detail::make_view(base, {2}, {3}, 1);
  CHECK(column.data_ptr<float>() == base.data_ptr<float>() + 1);
  base.impl()->bump_version();
  CHECK(column.version() == 1);
  CHECK(transposed.version() == 1);
  CHECK(column.key_set().bits() == base.key_set().bits());
  Tensor meta = detail::make_empty({4, 4}, kFloat32, Device(kMeta));
  CHECK(detail::make_view(meta, {4}, {5}, 0).is_meta());
}

TEST_CASE("tensor: make_view does not copy autograd state") {
  struct Meta : AutogradMetaInterface {
    bool requires_grad() const override { return true; }
  };
  Tensor base = filled({2}, kFloat32, {1, 2});
  base.impl()->set_autograd_meta(std::make_unique<Meta>());
  base.impl()->set_autograd_key(true);
  Tensor view = detail::make_view(base, {1}, {1}, 1);
  // Autograd may give the view state of its own (Note [Views made without grad]), never the base's.
  const AutogradMetaInterface* view_meta = view.impl()->autograd_meta();
  CHECK(view_meta != base.impl()->autograd_meta());
  CHECK(!(view_meta && view_meta->requires_grad()));
  CHECK(view.impl()->view_base() == base.impl());
  // A view reaches its base's keys (Note [Views and their base]); an alias does not.
  CHECK(view.key_set().has(DispatchKey::Autograd));
  Tensor alias = detail::make_alias(base, {1}, {1}, 1);
  CHECK(alias.impl()->view_base() == nullptr);
  CHECK_FALSE(alias.key_set().has(DispatchKey::Autograd));
}

TEST_CASE("tensor: make_view rejects geometry outside the storage") {
  Tensor base = filled({2, 3}, kFloat32, {0, 1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(detail::make_view(base, {3}, {3}, 0),
                       "[make_view] a view with size [3], stride [3] and offset 0 reaches elements [0, 6] outside "
                       "the storage of 6 elements",
                       ValueError);
  CHECK_THROWS_AS(detail::make_view(base, {}, {}, 6), ValueError);
  CHECK_THROWS_AS(detail::make_view(base, {2}, {-3}, 2), ValueError);  // reaches element -1
  CHECK(detail::make_view(base, {2}, {-3}, 3).numel() == 2);           // elements 3 and 0
  CHECK(detail::make_view(base, {0, 3}, {3, 1}, 6).numel() == 0);     // empty views may sit at the end
  CHECK_THROWS_AS(detail::make_view(Tensor(), {1}, {1}, 0), Error);
}

TEST_CASE("tensor: from_blob with a deleter calls it once, when the storage dies") {
  int calls = 0;
  void* released = nullptr;
  auto* buffer = new float[6]{0, 1, 2, 3, 4, 5};
  {
    Tensor owner = from_blob(buffer, {2, 3}, [&](void* data) { ++calls; released = data; delete[] static_cast<float*>(data); });
    CHECK(owner.data_ptr() == buffer);
    Tensor view = detail::make_view(owner, {3}, {2}, 0);  // a view keeps the storage alive
    owner = Tensor();
    CHECK(calls == 0);
    CHECK(view.data_ptr<float>()[2] == 2.0f);  // view element 1
  }
  CHECK(calls == 1);
  CHECK(released == buffer);

  double strided[4] = {1, 2, 3, 4};
  int strided_calls = 0;
  {
    Tensor transposed = from_blob(strided, {2, 2}, {1, 2}, [&](void*) { ++strided_calls; }, kFloat64);
    CHECK(transposed.strides() == IntArrayRef{1, 2});
    CHECK(transposed.data_ptr<double>() == strided);
  }
  CHECK(strided_calls == 1);
}

TEST_CASE("tensor: from_blob with a deleter that throws on bad input never calls it") {
  float buffer[4] = {};
  int calls = 0;
  auto deleter = [&](void*) { ++calls; };
  CHECK_THROWS_AS(from_blob(buffer, {2, 2}, {1}, deleter), ValueError);
  CHECK_THROWS_AS(from_blob(buffer, {4}, deleter, Device(kMeta)), ValueError);
  CHECK(calls == 0);
}

TEST_CASE("tensor: data() is an alias without autograd history") {
  Tensor x = filled({2}, kFloat32, {1, 2});
  x.requires_grad_(true);
  Tensor alias = x.data();
  CHECK_FALSE(alias.requires_grad());
  CHECK(alias.data_ptr() == x.data_ptr());
  CHECK(alias.sizes() == x.sizes());
  alias.data_ptr<float>()[0] = 5;
  CHECK(x.data_ptr<float>()[0] == 5);
}

TEST_CASE("tensor: set_data swaps storage, dtype and geometry but keeps the autograd identity") {
  Tensor x = filled({2}, kFloat32, {1, 2});
  x.requires_grad_(true);
  Tensor handle = x;  // another handle to the same tensor sees the change
  Tensor replacement = filled({3}, kFloat64, {7, 8, 9});
  x.set_data(replacement);
  CHECK(handle.dtype() == kFloat64);
  CHECK(handle.sizes() == IntArrayRef{3});
  CHECK(handle.data_ptr() == replacement.data_ptr());
  CHECK(handle.requires_grad());
  CHECK(handle.is_leaf());
  CHECK(handle.is_same(x));
  CHECK_THROWS_WITH_AS(x.set_data(filled({1}, kInt64, {1})),
                       "[set_data] data set to a tensor that requires gradients must be floating point, got Int64",
                       TypeError);
  CHECK_THROWS_WITH_AS(x.set_data(Tensor()), "[set_data] new_data is undefined", ValueError);
  Tensor plain = filled({1}, kFloat32, {1});
  plain.set_data(filled({2}, kInt32, {3, 4}));  // no grad: any dtype
  CHECK(plain.dtype() == kInt32);
  CHECK(plain.numel() == 2);
  CHECK_THROWS_AS(plain.set_data(detail::make_empty({2}, kFloat32, Device(kMeta))), TypeError);
}
