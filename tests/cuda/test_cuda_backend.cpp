// Tests for the CUDA backend through the public API (cuda/hooks.cpp, streams.cpp, allocator.cpp,
// host_allocator.cpp). Without the backend library they report themselves skipped; without a
// usable GPU, the "no GPU" cases run and the device cases are skipped with the reason.
#include <doctest/doctest.h>

#include <strata/strata.h>
#include <strata/tensor/cuda.h>
#include <strata/tensor/device_hooks.h>

#include <cmath>
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
  CHECK(error_of([] { (void)zeros({2}, TensorOptions().pinned_memory(true)); }).find("CUDA is not available") !=
        std::string::npos);
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

TEST_CASE("cuda backend: pin_memory factories, and dense strides kept on the way to the device and back" *
          doctest::skip(gpu_missing)) {
  const TensorOptions pinned = TensorOptions().pinned_memory(true);
  CHECK(zeros({2, 3}, pinned).is_pinned());
  CHECK(equal(arange(6, pinned.dtype(kFloat32)), arange(6, kFloat32)));
  CHECK(arange(6, pinned.dtype(kFloat32)).is_pinned());
  CHECK(arange(6, kFloat32).to(pinned).is_pinned());

  const Tensor x = arange(120, kFloat32).reshape({2, 3, 4, 5});
  const Tensor channels_last = x.contiguous(MemoryFormat::ChannelsLast).to(kCUDA);  // one block, as it is
  CHECK(channels_last.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(channels_last.cpu(), x));
  CHECK(channels_last.cpu().is_contiguous(MemoryFormat::ChannelsLast));
  const Tensor converted = x.to(kCUDA).contiguous(MemoryFormat::ChannelsLast);  // on the device
  CHECK(converted.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(converted.cpu(), x));
  CHECK(empty({2, 3, 4, 5}, TensorOptions(kCUDA).memory_format(MemoryFormat::ChannelsLast))
            .is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(empty_strided({3, 4}, {1, 3}, TensorOptions(kCUDA)).strides() == IntArrayRef{1, 3});
  const Tensor transposed = x.reshape({12, 10}).t();
  const Tensor on_device = transposed.to(pinned).to(kCUDA, /*non_blocking=*/true);
  CHECK(on_device.strides() == transposed.strides());
  CHECK(equal(on_device.cpu(), transposed));
  const Tensor weight = arange(54, kFloat32).reshape({2, 3, 3, 3}) / 50.0;
  CHECK(allclose(conv2d(channels_last, weight.to(kCUDA), {}, {1, 1}, {1, 1}).cpu(),
                 conv2d(x, weight, {}, {1, 1}, {1, 1}), 1e-4, 1e-3));
}

// Note [Strides of elementwise results] on the device: results have the CPU's strides, and
// operands sharing a permuted dense layout take the linear-index kernel (same_dense_layout)
// while mixed layouts take the stride-ordered indexer; both must give the CPU's values.
TEST_CASE("cuda backend: elementwise results follow their inputs' layout, with the CPU's values" *
          doctest::skip(gpu_missing)) {
  manual_seed(11);
  const Tensor plain = randn({4, 6, 5, 7});
  const Tensor x = plain.contiguous(MemoryFormat::ChannelsLast);
  const Tensor t = randn({37, 53}).t();
  const Tensor xd = x.to(kCUDA), plain_d = plain.to(kCUDA), td = t.to(kCUDA);
  const auto same = [](const Tensor& device, const Tensor& cpu) {
    CHECK(device.strides() == cpu.strides());
    CHECK(allclose(device.cpu(), cpu, 1e-5, 1e-6));
  };
  same(relu(xd), relu(x));
  same(xd * 2.0 + 1.0, x * 2.0 + 1.0);
  same(xd + plain_d, x + plain);  // mixed: channels last from the first input
  same(plain_d + xd, plain + x);
  same(exp(td), exp(t));
  same(td + td.contiguous(), t + t.contiguous());
  same(where(gt(xd, 0.0), xd, plain_d), where(gt(x, 0.0), x, plain));
  same(gelu(xd), gelu(x));
  same(cat({xd, xd}, 1), cat({x, x}, 1));
  same(xd.to(kFloat16).to(kFloat32), x.to(kFloat16).to(kFloat32));
  CHECK(allclose(mean(xd, {2, 3}, true).cpu(), mean(x, {2, 3}, true), 1e-5, 1e-6));
  // .grad of a channels-last leaf on the device is channels last.
  const Tensor leaf = xd.detach().requires_grad_();
  (leaf * leaf).sum().backward();
  CHECK(leaf.grad().is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(allclose(leaf.grad().cpu(), x * 2.0, 1e-5, 1e-6));
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

// Folds long enough to be split over many blocks (Note [Split reductions] in cuda/reduce_plan.h)
// give the CPU's results: every reduction kind, whole tensors and a few long rows.
TEST_CASE("cuda backend: long reductions split over the GPU agree with the CPU" * doctest::skip(gpu_missing)) {
  manual_seed(7);
  const int64_t n = int64_t{1} << 22;
  const Tensor x = rand({n}, TensorOptions(kFloat64));
  const Tensor xf = x.to(kFloat32), on_device = xf.to(kCUDA), wide = x.to(kCUDA);
  const auto close = [](const Tensor& got, const Tensor& expected, double tolerance) {
    return allclose(got.cpu().to(kFloat64), expected.to(kFloat64), tolerance, 0.0);
  };
  CHECK(close(on_device.sum(), xf.to(kFloat64).sum(), 1e-5));
  CHECK(close(on_device.mean(), xf.to(kFloat64).mean(), 1e-5));
  CHECK(close(wide.sum(), x.sum(), 1e-12));
  CHECK(close(wide.var(), x.var(), 1e-10));
  CHECK(close(on_device.std(), xf.to(kFloat64).std(), 1e-6));
  CHECK(close(wide.norm(), x.norm(), 1e-12));
  CHECK(close(on_device.logsumexp({0}), xf.to(kFloat64).logsumexp({0}), 1e-5));
  // Exact: integer sums, and extrema with ties in different ranges (the first position wins).
  const Tensor counts = arange(0, n, 1, TensorOptions(kInt64));
  CHECK(counts.to(kCUDA).sum().item<int64_t>() == n * (n - 1) / 2);
  Tensor peaks = xf.clone();
  float* peak_values = peaks.data_ptr<float>();
  peak_values[3 * n / 4] = peak_values[n / 3] = 2.0f;  // rand is below 1
  peak_values[n - 1] = -1.0f;
  const Tensor peaks_device = peaks.to(kCUDA);
  CHECK(peaks_device.argmax().item<int64_t>() == n / 3);
  CHECK(peaks_device.argmin().item<int64_t>() == n - 1);
  CHECK(peaks_device.max().item<float>() == 2.0f);
  // A few long rows, reduced along the rows and (strided) down the columns.
  const Tensor rows = xf.reshape({4, n / 4});
  const Tensor rows_device = rows.to(kCUDA);
  CHECK(close(rows_device.sum(1), rows.to(kFloat64).sum(1), 1e-5));
  CHECK(close(rows_device.t().contiguous().sum(0), rows.to(kFloat64).sum(1), 1e-5));
  // Outer-dim reductions, read by columns (Note [Column reductions]): several tiles, the last
  // one partial, from a strided view on the device.
  const Tensor tall = peaks.reshape({n / 128, 128});
  const Tensor tall_device = tall.to(kCUDA).slice(1, 0, 100);
  CHECK(close(tall_device.sum(0), tall.slice(1, 0, 100).to(kFloat64).sum(0), 1e-5));
  CHECK(equal(tall_device.argmax(0).cpu(), tall.slice(1, 0, 100).argmax(0)));
  CHECK(close(tall_device.to(kFloat64).var(0), tall.slice(1, 0, 100).to(kFloat64).var(0), 1e-10));
  const auto [values, indices] = peaks_device.reshape({4, n / 4}).max(1, false);
  const auto [cpu_values, cpu_indices] = peaks.reshape({4, n / 4}).max(1, false);
  CHECK(equal(values.cpu(), cpu_values));
  CHECK(equal(indices.cpu(), cpu_indices));
}

// Note [CUDA random numbers]: randn's Box-Muller takes 24-bit uniforms for every dtype below
// float64. From the dtype's own 11 (float16) or 8 (bfloat16) bits, one pair in 2048 (or 256)
// came out exactly zero and no value passed 3.9 (or 3.3) sigma.
TEST_CASE("cuda: randn in float16 and bfloat16 has no zero pairs and full tails" * doctest::skip(gpu_missing)) {
  for (ScalarType dtype : {kFloat16, kBFloat16}) {
    CAPTURE(dtype);
    manual_seed(3);
    const Tensor x = randn({1 << 20}, TensorOptions().dtype(dtype).device(kCUDA)).to(kFloat32).cpu();
    CHECK(eq(x, 0).sum().item<int64_t>() <= 2);
    CHECK(x.abs().max().item<float>() > 4.2f);
    CHECK(std::abs(x.mean().item<float>()) < 0.01f);
    CHECK(std::abs(x.std().item<float>() - 1.0f) < 0.01f);
  }
}

// conv2d with no input channels is the bias alone; cuBLAS cannot take the empty product (its
// leading dimension would be 0), so it is skipped.
TEST_CASE("cuda: conv2d with zero input channels gives the bias" * doctest::skip(gpu_missing)) {
  const Tensor x = randn({2, 0, 5, 5}), w = randn({3, 0, 3, 3}), b = randn({3});
  const Tensor on_gpu = conv2d(x.cuda(), w.cuda(), b.cuda(), {1, 1}, {1, 1});
  CHECK(allclose(on_gpu.cpu(), conv2d(x, w, b, {1, 1}, {1, 1})));
  CHECK(allclose(conv2d(x.cuda(), w.cuda()).cpu(), zeros({2, 3, 3, 3})));
}
