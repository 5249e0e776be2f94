// Tests for tensor/dlpack.cpp: zero-copy round trips, strides, every dtype, and who frees what.
#include <doctest/doctest.h>

#include <dlpack/dlpack.h>

#include <strata/ops/ops.h>
#include <strata/tensor/dlpack.h>

#include <cstdint>
#include <vector>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

// A DLPack tensor as another framework would produce it, counting its deleter's calls.
struct Producer {
  std::vector<int64_t> shape, strides;
  std::vector<uint8_t> buffer;
  DLManagedTensor managed{};
  int deleter_calls = 0;

  Producer(std::vector<int64_t> shape_, std::vector<int64_t> strides_, DLDataType dtype, size_t bytes)
      : shape(std::move(shape_)), strides(std::move(strides_)), buffer(bytes) {
    managed.dl_tensor.data = buffer.data();
    managed.dl_tensor.device = DLDevice{kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int>(shape.size());
    managed.dl_tensor.dtype = dtype;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleter_calls; };
  }
};

}  // namespace

TEST_CASE("dlpack: to_dlpack shares memory, sizes, strides and dtype, and keeps the tensor alive") {
  Tensor t = arange(6, kFloat32).view({2, 3}).transpose(0, 1);
  const void* data = t.data_ptr();
  DLManagedTensor* managed = to_dlpack(t);
  t = Tensor();  // the DLPack tensor alone keeps the memory alive
  const DLTensor& dl = managed->dl_tensor;
  CHECK(dl.data == data);
  CHECK(dl.device.device_type == kDLCPU);
  CHECK(dl.ndim == 2);
  CHECK(std::vector<int64_t>(dl.shape, dl.shape + 2) == std::vector<int64_t>{3, 2});
  CHECK(std::vector<int64_t>(dl.strides, dl.strides + 2) == std::vector<int64_t>{1, 3});
  CHECK(dl.dtype.code == kDLFloat);
  CHECK(dl.dtype.bits == 32);
  CHECK(dl.dtype.lanes == 1);
  CHECK(static_cast<const float*>(dl.data)[4] == 4.0f);
  managed->deleter(managed);
}

TEST_CASE("dlpack: a round trip is zero-copy for every dtype and keeps strides") {
  for (ScalarType dtype : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    INFO(dtype);
    Tensor original = arange(12).to(dtype).view({3, 4}).slice(1, 1, 4, 2);  // strides [4, 2]
    Tensor back = from_dlpack(to_dlpack(original));
    CHECK(back.dtype() == dtype);
    CHECK(back.data_ptr() == original.data_ptr());
    CHECK(back.sizes() == original.sizes());
    CHECK(back.strides() == original.strides());
    CHECK(equal(back, original));
  }
}

TEST_CASE("dlpack: from_dlpack honours the producer's deleter exactly once, when the storage dies") {
  Producer producer({2, 3}, {}, DLDataType{kDLInt, 16, 1}, 2 * 3 * 2);
  auto* values = reinterpret_cast<int16_t*>(producer.buffer.data());
  for (int i = 0; i < 6; ++i) values[i] = static_cast<int16_t>(i - 3);
  {
    Tensor t = from_dlpack(&producer.managed);
    CHECK(t.dtype() == kInt16);
    CHECK(t.strides() == IntArrayRef{3, 1});  // null strides: row-major
    CHECK(t.data_ptr() == producer.buffer.data());
    Tensor row = t.select(0, 1);
    t = Tensor();
    CHECK(producer.deleter_calls == 0);
    CHECK(row.sum().item<int64_t>() == 0 + 1 + 2);
  }
  CHECK(producer.deleter_calls == 1);

  Producer offset({2}, {3}, DLDataType{kDLFloat, 64, 1}, 8 * 8);
  offset.managed.dl_tensor.byte_offset = 8;
  auto* doubles = reinterpret_cast<double*>(offset.buffer.data());
  for (int i = 0; i < 8; ++i) doubles[i] = i;
  {
    Tensor t = from_dlpack(&offset.managed);
    CHECK(t.strides() == IntArrayRef{3});
    CHECK(t.select(0, 1).item<double>() == 4.0);  // element 1 + 3
  }
  CHECK(offset.deleter_calls == 1);
}

TEST_CASE("dlpack: refusals name the problem and leave the producer's tensor alone") {
  expect_error<ValueError>([] { (void)to_dlpack(zeros({2}, kMeta)); }, "[to_dlpack] a Meta tensor has no data");
  expect_error<ValueError>([] { (void)to_dlpack(Tensor()); }, "[to_dlpack] the tensor is undefined");
  Producer vulkan({1}, {}, DLDataType{kDLFloat, 32, 1}, 4);
  vulkan.managed.dl_tensor.device = DLDevice{kDLVulkan, 0};
  expect_error<NotImplementedError>([&] { (void)from_dlpack(&vulkan.managed); }, "[from_dlpack] DLPack device type 7");
  Producer complex({1}, {}, DLDataType{kDLComplex, 64, 1}, 8);
  expect_error<TypeError>([&] { (void)from_dlpack(&complex.managed); }, "[from_dlpack] unsupported DLPack dtype");
  Producer vector({1}, {}, DLDataType{kDLFloat, 32, 4}, 16);
  expect_error<TypeError>([&] { (void)from_dlpack(&vector.managed); }, "[from_dlpack] vector dtypes");
  Producer negative({2}, {-1}, DLDataType{kDLFloat, 32, 1}, 8);
  expect_error<ValueError>([&] { (void)from_dlpack(&negative.managed); }, "[from_dlpack] strides must be non-negative");
  CHECK(vulkan.deleter_calls + complex.deleter_calls + vector.deleter_calls + negative.deleter_calls == 0);
  expect_error<ValueError>([] { (void)from_dlpack(nullptr); }, "[from_dlpack] got a null DLManagedTensor");
}
