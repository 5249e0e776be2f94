// Tests for ops/copy.h: copies between devices go through copy_across_devices, on the fake
// CUDA backend of tests/tensor/fake_cuda.h (its memory is host memory).
#include <doctest/doctest.h>

#include <strata/autograd/autograd.h>
#include <strata/nn/modules.h>
#include <strata/ops/copy.h>
#include <strata/ops/ops.h>
#include <strata/tensor/device_guard.h>
#include <strata/tensor/errors.h>

#include "../tensor/fake_cuda.h"

using namespace strata;
using strata::testing::as_host;
using strata::testing::FakeCudaBackend;

namespace {
// A [4, 3] float32 view of [3, 4] values: non-contiguous, with a storage offset of 0.
Tensor transposed_floats() { return arange(12, TensorOptions().dtype(kFloat32)).reshape({3, 4}).transpose(0, 1); }

Tensor cuda_empty(IntArrayRef sizes, ScalarType dtype, int device) {
  return detail::make_empty(sizes, dtype, Device(kCUDA, device));
}
}  // namespace

TEST_CASE("copy: CPU -> CUDA -> CPU round trip of a non-contiguous tensor with dtype changes") {
  FakeCudaBackend backend;
  const Tensor x = transposed_floats();
  REQUIRE_FALSE(x.is_contiguous());
  const Tensor on_device = x.to(Device(kCUDA, 1), kFloat64);
  CHECK(on_device.device() == Device(kCUDA, 1));
  CHECK(on_device.dtype() == kFloat64);
  CHECK(equal(as_host(on_device), x.to(kFloat64)));
  REQUIRE(backend.hooks.copies.size() == 1);  // converted on the CPU, one byte move
  CHECK(backend.hooks.copies[0].nbytes == 12 * sizeof(double));
  CHECK(backend.hooks.copies[0].dst == Device(kCUDA, 1));
  CHECK(backend.hooks.copies[0].src == Device(kCPU));

  const Tensor back = on_device.to(Device(kCPU), kFloat32);
  CHECK(back.device() == Device(kCPU));
  CHECK(back.dtype() == kFloat32);
  CHECK(equal(back, x));
  CHECK(backend.hooks.copies.size() == 2);
  CHECK(backend.hooks.copies[1].dst == Device(kCPU));
}

TEST_CASE("copy: item() of a device tensor copies its one element to the host") {
  FakeCudaBackend backend;
  const Tensor on_device = full({1}, 2.5, TensorOptions(kFloat64)).cuda();
  const size_t copies = backend.hooks.copies.size();
  CHECK(on_device.item<double>() == 2.5);
  REQUIRE(backend.hooks.copies.size() == copies + 1);
  CHECK(backend.hooks.copies.back().nbytes == 8);
  CHECK_FALSE(backend.hooks.copies.back().non_blocking);
}

TEST_CASE("copy: cpu() and cuda() move between the devices") {
  FakeCudaBackend backend;
  const Tensor x = transposed_floats();
  const Tensor on_device = x.cuda();
  CHECK(on_device.device() == Device(kCUDA, 0));
  CHECK(equal(on_device.cpu(), x));
  CHECK(x.cpu().is_same(x));
  {
    DeviceGuard guard(Device(kCUDA, 1));  // cuda() goes to the current device, as in LibTorch
    CHECK(x.cuda().device() == Device(kCUDA, 1));
  }
  CHECK(x.cuda().device() == Device(kCUDA, 0));
}

TEST_CASE("copy: to(device, non_blocking) passes non_blocking down; copy=true forces a new tensor") {
  FakeCudaBackend backend;
  const Tensor dense = arange(6, TensorOptions().dtype(kFloat32));
  const Tensor on_device = dense.to(Device(kCUDA, 0), /*non_blocking=*/true);
  REQUIRE_FALSE(backend.hooks.copies.empty());
  CHECK(backend.hooks.copies.back().non_blocking);
  CHECK(on_device.to(Device(kCUDA, 0), /*non_blocking=*/true).is_same(on_device));
  CHECK_FALSE(on_device.to(Device(kCUDA, 0), /*non_blocking=*/false, /*copy=*/true).is_same(on_device));
  (void)on_device.to(Device(kCPU));
  CHECK_FALSE(backend.hooks.copies.back().non_blocking);
}

TEST_CASE("copy: copy_ from CPU into a non-contiguous CUDA tensor broadcasts and converts") {
  FakeCudaBackend backend;
  const Tensor dst = cuda_empty({4, 3}, kFloat64, 0).transpose(0, 1);  // [3, 4], non-contiguous
  const Tensor row = arange(4, TensorOptions().dtype(kInt32));
  dst.copy_(row);
  const Tensor expected = row.to(kFloat64).expand({3, 4});
  CHECK(equal(as_host(dst), expected));
  CHECK(equal(dst.cpu(), expected));
}

TEST_CASE("copy: copy_ from a non-contiguous CUDA tensor into a non-contiguous CPU tensor") {
  FakeCudaBackend backend;
  const Tensor src = transposed_floats().cuda();  // contiguous on the device
  const Tensor src_view = src.transpose(0, 1);    // [3, 4], non-contiguous
  const Tensor dst = zeros({4, 3}, TensorOptions().dtype(kFloat64)).transpose(0, 1);
  dst.copy_(src_view);
  CHECK(equal(dst, transposed_floats().transpose(0, 1).to(kFloat64)));
}

TEST_CASE("copy: between two devices of one type the bytes move device to device") {
  FakeCudaBackend backend;
  const Tensor x = transposed_floats();
  const Tensor first = x.to(Device(kCUDA, 0), kFloat32);
  backend.hooks.copies.clear();
  const Tensor second = first.to(Device(kCUDA, 1), kFloat64);
  CHECK(second.device() == Device(kCUDA, 1));
  CHECK(equal(second.cpu(), x.to(kFloat64)));
  CHECK(backend.hooks.copies[0].src == Device(kCUDA, 0));
  CHECK(backend.hooks.copies[0].dst == Device(kCUDA, 1));
}

TEST_CASE("copy: non_blocking reaches the hooks only when no CPU buffer of ours takes part") {
  FakeCudaBackend backend;
  const Tensor dense = arange(6, TensorOptions().dtype(kFloat32));
  const Tensor dst = cuda_empty({6}, kFloat32, 0);
  detail::copy_across_devices(dst, dense, /*non_blocking=*/true);
  CHECK(backend.hooks.copies.back().non_blocking);
  detail::copy_across_devices(dst, dense.to(kFloat64), /*non_blocking=*/true);  // converted into a CPU buffer
  CHECK_FALSE(backend.hooks.copies.back().non_blocking);
  CHECK(equal(as_host(dst), dense));
}

TEST_CASE("copy: gradients flow back through to() across devices") {
  FakeCudaBackend backend;
  const Tensor x = arange(4, TensorOptions().dtype(kFloat64)).requires_grad_();
  const Tensor y = x.cuda().cpu() * 3.0;
  y.sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device() == Device(kCPU));
  CHECK(equal(x.grad(), full({4}, 3.0, TensorOptions().dtype(kFloat64))));
}

TEST_CASE("copy: Meta tensors have no bytes to move") {
  FakeCudaBackend backend;
  const Tensor meta = empty({2}, TensorOptions().device(Device(kMeta)));
  CHECK_THROWS_AS(detail::copy_across_devices(cuda_empty({2}, kFloat32, 0), meta, false), Error);
  CHECK_THROWS_WITH_AS(meta.to(Device(kCUDA)),
                       "[_to_copy] cannot copy from a meta tensor to cuda:0: meta tensors have no data", Error);
  CHECK(cuda_empty({2}, kFloat32, 1).to(Device(kMeta)).device() == Device(kMeta));
}

TEST_CASE("copy: without a backend, moving to CUDA throws Error naming what is missing") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  const Tensor x = transposed_floats();
  CHECK_THROWS_WITH_AS(x.to(kCUDA), "[cuda] no CUDA backend is loaded (_to_copy needs one)", Error);
  CHECK_THROWS_WITH_AS(x.cuda(), "[cuda] no CUDA backend is loaded (_to_copy needs one)", Error);
  CHECK_THROWS_AS(empty({2}, TensorOptions().device(Device(kMeta))).cuda(), Error);
  CHECK(x.cpu().is_same(x));
}

TEST_CASE("copy: unloading the backend brings the errors back") {
  strata::testing::NoCudaBackend no_backend;  // the real one, on a machine with a GPU
  {
    FakeCudaBackend backend;
    CHECK(transposed_floats().cuda().device().is_cuda());
  }
  CHECK_THROWS_AS(transposed_floats().cuda(), Error);
}

// Note [Bare device types] in tensor/tensor_options.h.
TEST_CASE("to: a bare kCUDA is the current device, looked up when the options are used") {
  FakeCudaBackend backend;
  const Tensor x = transposed_floats();
  const TensorOptions bare(kCUDA);  // made before the guard
  CHECK(x.to(kCUDA).device() == Device(kCUDA, 0));
  {
    DeviceGuard guard(Device(kCUDA, 1));
    CHECK(bare.device() == Device(kCUDA, 1));
    CHECK(bare.device_opt() == Device(kCUDA, 1));
    CHECK(x.to(kCUDA).device() == Device(kCUDA, 1));
    CHECK(x.to(bare).device() == Device(kCUDA, 1));
    CHECK(x.cuda().device() == Device(kCUDA, 1));
    CHECK(x.to(kCUDA, kFloat64).device() == Device(kCUDA, 1));
    CHECK(x.to(TensorOptions().dtype(kFloat64).device(kCUDA)).device() == Device(kCUDA, 1));
    CHECK(x.to(device(kCUDA)).device() == Device(kCUDA, 1));
    CHECK(TensorOptions(kFloat64).merged_with(bare).device() == Device(kCUDA, 1));
    CHECK(bare.merged_with(TensorOptions(kFloat64)).device() == Device(kCUDA, 1));
    CHECK(equal(as_host(x.to(kCUDA)), x));
    // A Device always has its index (Device(kCUDA) is cuda:0 by the API contract), and setting
    // one replaces a bare type.
    CHECK(x.to(Device(kCUDA)).device() == Device(kCUDA, 0));
    CHECK(bare.device(Device(kCUDA, 0)).device() == Device(kCUDA, 0));
    // Already on the current device: no copy.
    const Tensor on_one = x.to(kCUDA);
    CHECK(on_one.to(kCUDA).is_same(on_one));
    CHECK(on_one.cuda().is_same(on_one));
  }
  CHECK(bare.device() == Device(kCUDA, 0));
  CHECK(TensorOptions(kCPU).device() == Device(kCPU));
  CHECK(TensorOptions(kMeta).device() == Device(kMeta));
  CHECK_FALSE(TensorOptions(kFloat32).has_device());
}

TEST_CASE("to: a module moved to a bare kCUDA goes to the current device") {
  FakeCudaBackend backend;
  nn::Linear linear(3, 2);
  const Tensor weight = linear->weight.detach().clone();
  DeviceGuard guard(Device(kCUDA, 1));
  linear->to(kCUDA);
  for (const Tensor& parameter : linear->parameters()) {
    CHECK(parameter.device() == Device(kCUDA, 1));
    CHECK(parameter.is_leaf());
    CHECK(parameter.requires_grad());
  }
  CHECK(equal(as_host(linear->weight), weight));
  linear.to(kCPU);
  CHECK(linear->weight.device() == Device(kCPU));
}

TEST_CASE("to: without a backend, a bare kCUDA names cuda:0 and the copy says why it cannot") {
  strata::testing::NoCudaBackend no_backend;
  CHECK(TensorOptions(kCUDA).device() == Device(kCUDA, 0));
  CHECK_THROWS_WITH_AS(transposed_floats().to(kCUDA, kFloat64), "[cuda] no CUDA backend is loaded (_to_copy needs one)",
                       Error);
}
