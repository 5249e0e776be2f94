// Tests for the CUDA backend through the public API (cuda/hooks.cpp, streams.cpp, allocator.cpp,
// host_allocator.cpp). Without the backend library they report themselves skipped; without a
// usable GPU, the "no GPU" cases run and the device cases are skipped with the reason.
#include <doctest/doctest.h>

#include <strata/strata.h>
#include <strata/tensor/cuda.h>
#include <strata/tensor/device_hooks.h>

#include <string>

using namespace strata;

namespace {
const bool backend_missing = strata::detail::device_hooks(kCUDA) == nullptr;
const bool gpu_missing = !cuda::is_available();

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("cuda backend: without a usable GPU, strata runs on the CPU and CUDA calls say why" *
          doctest::skip(backend_missing || !gpu_missing)) {
  CHECK_FALSE(cuda::is_available());
  CHECK(cuda::device_count() == 0);
  cuda::synchronize();  // a no-op, as in LibTorch
  const std::string reason = strata::detail::device_hooks(kCUDA)->unavailable_reason();
  CHECK_FALSE(reason.empty());
  const Tensor x = ones({2, 3});
  CHECK(error_of([&] { (void)x.to(kCUDA); }).rfind("[cuda] CUDA is not available: " + reason + " (", 0) == 0);
  CHECK(error_of([&] { (void)x.cuda(); }).find("CUDA is not available") != std::string::npos);
  CHECK(error_of([&] { (void)empty({2}, TensorOptions().device(kCUDA)); }).find("CUDA is not available") !=
        std::string::npos);
  CHECK(error_of([&] { (void)x.pin_memory(); }).find("[cuda] CUDA is not available") != std::string::npos);
  CHECK(error_of([] { (void)cuda::Stream::create(); }).find("CUDA is not available") != std::string::npos);
  CHECK(error_of([] { DeviceGuard guard{Device(kCUDA)}; }).find("CUDA is not available") != std::string::npos);
  CHECK_FALSE(x.is_pinned());
  CHECK((x * 2).sum().item<float>() == 12.0f);  // the CPU is untouched
}

TEST_CASE("cuda backend: tensors go to the device and back, blocking and not" * doctest::skip(gpu_missing)) {
  const Tensor x = arange(0, 24, 1, TensorOptions(kFloat32)).reshape({2, 3, 4});
  const Tensor on_device = x.to(kCUDA);
  CHECK(on_device.is_cuda());
  CHECK(on_device.device() == Device(kCUDA, cuda::current_device()));
  CHECK(equal(on_device.cpu(), x));
  CHECK(equal(on_device.transpose(0, 2).cpu(), x.transpose(0, 2)));  // strided device source
  CHECK(equal(on_device.to(kFloat64).cpu(), x.to(kFloat64)));         // conversion on the device

  const Tensor pinned = x.pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(pinned.pin_memory().is_same(pinned));
  const Tensor async = pinned.to(kCUDA, /*non_blocking=*/true);
  Tensor back = empty({2, 3, 4}).pin_memory();
  back.copy_(async, /*non_blocking=*/true);
  cuda::synchronize();
  CHECK(equal(back, x));
}

TEST_CASE("cuda backend: streams order work and events time it" * doctest::skip(gpu_missing)) {
  cuda::Stream stream = cuda::Stream::create();
  CHECK_FALSE(stream.is_default());
  Event start(kCUDA, /*enable_timing=*/true), end(kCUDA, /*enable_timing=*/true);
  {
    cuda::StreamGuard guard(stream);
    CHECK(cuda::current_stream() == stream);
    start.record();
    const Tensor y = ones({1024, 1024}, TensorOptions().device(kCUDA)) * 3;
    end.record();
    y.record_stream(stream);
  }
  CHECK(cuda::current_stream().is_default());
  end.synchronize();
  CHECK(end.query());
  CHECK(start.elapsed_time(end) >= 0.0);
  stream.synchronize();
  CHECK(stream.query());
}

TEST_CASE("cuda backend: a steady loop reuses cached blocks (no cudaMalloc after the first step)" *
          doctest::skip(gpu_missing)) {
  const Tensor w = ones({256, 256}, TensorOptions().device(kCUDA));
  auto step = [&] { (void)((w * 2 + 1).sum()); };
  step();
  cuda::synchronize();
  const int64_t mallocs = cuda::memory_stats().device_mallocs;
  for (int i = 0; i < 50; ++i) step();
  cuda::synchronize();
  CHECK(cuda::memory_stats().device_mallocs == mallocs);
  CHECK(cuda::memory_stats().allocated_bytes >= 256 * 256 * 4);
  cuda::empty_cache();
  CHECK(cuda::memory_stats().reserved_bytes >= cuda::memory_stats().allocated_bytes);
}

TEST_CASE("cuda backend: out of memory is an Error saying how much was asked and held" * doctest::skip(gpu_missing)) {
  const std::string message = error_of([] { (void)empty({int64_t{1} << 50}, TensorOptions().device(kCUDA)); });
  CHECK(message.find("CUDA out of memory") != std::string::npos);
  CHECK(message.find("tried to allocate") != std::string::npos);
  const Tensor still_works = ones({4}, TensorOptions().device(kCUDA));
  CHECK(still_works.sum().item<float>() == 4.0f);
}

TEST_CASE("cuda backend: memory used on another stream is not handed out before that stream is done" *
          doctest::skip(gpu_missing)) {
  const auto options = TensorOptions().device(kCUDA);
  cuda::Stream side = cuda::Stream::create();
  const Tensor a = randn({2048, 2048}, options), b = randn({2048, 2048}, options);
  cuda::synchronize();
  void* first = nullptr;
  {
    Tensor x = empty({1 << 20}, options);  // made on the default stream
    first = x.data_ptr();
    cuda::StreamGuard guard(side);
    for (int i = 0; i < 20; ++i) (void)matmul(a, b);  // keeps the side stream busy
    x.fill_(1.0);                                        // x used on the side stream
    x.record_stream(side);
  }  // x freed while the side stream may still be writing it
  const bool side_busy = !side.query();
  const Tensor y = empty({1 << 20}, options);
  if (side_busy) CHECK(y.data_ptr() != first);
  side.synchronize();
  cuda::synchronize();
}
