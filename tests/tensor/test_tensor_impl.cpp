// Tests for tensor/tensor_impl.cpp: geometry, contiguity, numel checks, keys, autograd slot.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/tensor_impl.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

using namespace strata;

namespace {

intrusive_ptr<TensorImpl> make_impl(IntArrayRef sizes, IntArrayRef strides, int64_t offset = 0,
                                    Device device = Device(kCPU)) {
  return make_intrusive<TensorImpl>(make_storage(256, device), kFloat32, sizes, strides, offset);
}

bool contiguous(IntArrayRef sizes, IntArrayRef strides) { return make_impl(sizes, strides)->is_contiguous(); }

struct FakeAutogradMeta : AutogradMetaInterface {
  explicit FakeAutogradMeta(bool* destroyed) : destroyed_(destroyed) {}
  ~FakeAutogradMeta() override { *destroyed_ = true; }
  bool requires_grad() const override { return true; }
  bool* destroyed_;
};

}  // namespace

TEST_CASE("tensor_impl: the contiguous constructor computes strides and numel") {
  auto impl = make_intrusive<TensorImpl>(make_storage(24 * 4, Device(kCPU)), kFloat32, IntArrayRef{2, 3, 4});
  CHECK(impl->sizes() == IntArrayRef{2, 3, 4});
  CHECK(impl->strides() == IntArrayRef{12, 4, 1});
  CHECK(impl->dim() == 3);
  CHECK(impl->numel() == 24);
  CHECK(impl->storage_offset() == 0);
  CHECK(impl->is_contiguous());
  CHECK(impl->dtype() == kFloat32);
  CHECK(impl->device() == Device(kCPU));
  CHECK(impl->data() == impl->storage()->data());
}

TEST_CASE("tensor_impl: a 0-d tensor has one element") {
  auto impl = make_intrusive<TensorImpl>(make_storage(8, Device(kCPU)), kFloat64, IntArrayRef{});
  CHECK(impl->dim() == 0);
  CHECK(impl->numel() == 1);
  CHECK(impl->is_contiguous());
  CHECK(impl->strides().empty());
}

TEST_CASE("tensor_impl: contiguity follows PyTorch's rule") {
  CHECK(contiguous({2, 3}, {3, 1}));
  CHECK_FALSE(contiguous({2, 3}, {1, 2}));   // transposed
  CHECK_FALSE(contiguous({2, 3}, {6, 2}));   // every other column
  CHECK(contiguous({2, 1, 3}, {3, 99, 1}));  // size-1 dims may have any stride
  CHECK(contiguous({1, 1}, {7, 5}));
  CHECK(contiguous({3}, {1}));
  CHECK_FALSE(contiguous({3}, {2}));
  CHECK(contiguous({2, 0, 3}, {5, 7, 11}));  // no elements
  CHECK_FALSE(contiguous({2, 3}, {0, 1}));   // expanded
}

TEST_CASE("tensor_impl: data() includes the storage offset in elements") {
  auto impl = make_impl({2}, {1}, 5);
  CHECK(impl->storage_offset() == 5);
  CHECK(static_cast<char*>(impl->data()) == static_cast<char*>(impl->storage()->data()) + 5 * 4);
  auto meta = make_impl({2}, {1}, 5, Device(kMeta));
  CHECK(meta->data() == nullptr);
}

TEST_CASE("tensor_impl: set_sizes_and_strides and set_sizes_contiguous replace the geometry") {
  auto impl = make_impl({4, 4}, {4, 1});
  impl->set_sizes_and_strides({4, 2}, {1, 8}, 3);
  CHECK(impl->sizes() == IntArrayRef{4, 2});
  CHECK(impl->strides() == IntArrayRef{1, 8});
  CHECK(impl->storage_offset() == 3);
  CHECK(impl->numel() == 8);
  CHECK_FALSE(impl->is_contiguous());
  impl->set_sizes_contiguous({2, 2, 2, 2, 2, 2, 2});  // more dims than fit inline
  CHECK(impl->strides() == IntArrayRef{64, 32, 16, 8, 4, 2, 1});
  CHECK(impl->storage_offset() == 0);
  CHECK(impl->numel() == 128);
  CHECK(impl->is_contiguous());
}

TEST_CASE("tensor_impl: bad geometry throws ValueError and leaves the tensor unchanged") {
  auto impl = make_impl({4}, {1});
  CHECK_THROWS_WITH_AS(impl->set_sizes_and_strides({2, 2}, {1}, 0),
                       "[TensorImpl] got 2 sizes [2, 2] but 1 strides [1]", ValueError);
  CHECK_THROWS_WITH_AS(impl->set_sizes_and_strides({2}, {1}, -1),
                       "[TensorImpl] storage offset must be non-negative, got -1", ValueError);
  CHECK_THROWS_WITH_AS(impl->set_sizes_contiguous({2, -3}), "[TensorImpl] negative dimension -3 in size [2, -3]",
                       ValueError);
  CHECK(impl->sizes() == IntArrayRef{4});
  CHECK(impl->numel() == 4);
}

TEST_CASE("tensor_impl: contiguous_strides") {
  CHECK(contiguous_strides({2, 3, 4}).vec() == std::vector<int64_t>{12, 4, 1});
  CHECK(contiguous_strides({}).empty());
  CHECK(contiguous_strides({5}).vec() == std::vector<int64_t>{1});
  CHECK(contiguous_strides({2, 0, 3}).vec() == std::vector<int64_t>{3, 3, 1});  // as torch.empty(2, 0, 3)
  CHECK(contiguous_strides({2, 1, 3}).vec() == std::vector<int64_t>{3, 3, 1});
}

TEST_CASE("tensor_impl: checked_numel") {
  CHECK(checked_numel({}, "op") == 1);
  CHECK(checked_numel({2, 3}, "op") == 6);
  CHECK(checked_numel({2, 0, 3}, "op") == 0);
  CHECK(checked_numel({std::numeric_limits<int64_t>::max(), 2, 0}, "op") == 0);  // zero wins over overflow
  CHECK_THROWS_WITH_AS(checked_numel({2, -1}, "zeros"), "[zeros] negative dimension -1 in size [2, -1]", ValueError);
  // A negative size wins over a zero and over an overflow, wherever it is.
  CHECK_THROWS_WITH_AS(checked_numel({0, -1}, "zeros"), "[zeros] negative dimension -1 in size [0, -1]", ValueError);
  CHECK_THROWS_WITH_AS(checked_numel({std::numeric_limits<int64_t>::max(), 2, -4}, "zeros"),
                       "[zeros] negative dimension -4 in size [9223372036854775807, 2, -4]", ValueError);
  CHECK(checked_numel({std::numeric_limits<int64_t>::max()}, "op") == std::numeric_limits<int64_t>::max());
  CHECK_THROWS_WITH_AS(checked_numel({int64_t{1} << 40, int64_t{1} << 40}, "empty"),
                       "[empty] size [1099511627776, 1099511627776] has more elements than int64 can count",
                       ValueError);
}

TEST_CASE("tensor_impl: the key set is the backend key of the storage's device") {
  CHECK((backend_key(kCPU) == DispatchKey::CPU));  // parenthesised: DispatchKey printing lives in dispatch/
  CHECK((backend_key(kCUDA) == DispatchKey::CUDA));
  CHECK((backend_key(kMeta) == DispatchKey::Meta));
  auto cpu = make_impl({2}, {1});
  CHECK(cpu->key_set().has(DispatchKey::CPU));
  CHECK(cpu->key_set().bits() == DispatchKeySet(DispatchKey::CPU).bits());
  auto meta = make_impl({2}, {1}, 0, Device(kMeta));
  CHECK(meta->key_set().bits() == DispatchKeySet(DispatchKey::Meta).bits());
}

TEST_CASE("tensor_impl: the autograd key and the autograd meta slot") {
  auto impl = make_impl({2}, {1});
  CHECK(impl->autograd_meta() == nullptr);
  impl->set_autograd_key(true);
  CHECK(impl->key_set().has(DispatchKey::Autograd));
  CHECK(impl->key_set().has(DispatchKey::CPU));
  impl->set_autograd_key(false);
  CHECK_FALSE(impl->key_set().has(DispatchKey::Autograd));
  bool first_destroyed = false, second_destroyed = false;
  impl->set_autograd_meta(std::make_unique<FakeAutogradMeta>(&first_destroyed));
  REQUIRE(impl->autograd_meta() != nullptr);
  CHECK(impl->autograd_meta()->requires_grad());
  impl->set_autograd_meta(std::make_unique<FakeAutogradMeta>(&second_destroyed));
  CHECK(first_destroyed);
  impl.reset();
  CHECK(second_destroyed);
}

TEST_CASE("tensor_impl: tensors sharing a storage share its version counter") {
  auto storage = make_storage(64, Device(kCPU));
  auto first = make_intrusive<TensorImpl>(storage, kFloat32, IntArrayRef{4});
  auto second = make_intrusive<TensorImpl>(storage, kFloat32, IntArrayRef{2}, IntArrayRef{2}, 1);
  first->bump_version();
  CHECK(second->version() == 1);
  CHECK(storage->use_count() == 3);
}
