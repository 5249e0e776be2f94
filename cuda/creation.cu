// CUDA kernels of ops/creation.cpp: empty, zeros, ones, full, arange, linspace, eye, rand,
// randn, randint (the one-bound arange, eye and randint are composites of these). Shape
// functions and checks are ops/shapes/creation.h's; the values are cuda/creation_ops.h's
// (host-tested). Every output is fresh and contiguous.
#include <mutex>
#include <utility>

#include <strata/cuda/creation_ops.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/fill.h>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/creation.h>
#include <strata/ops/structured.h>
#include <strata/tensor/generator.h>

namespace strata {
namespace cuda::detail {
namespace {

// out[i] = f(i) for a contiguous out, converted to T.
template <class T, class F>
__global__ void indexed_kernel(int64_t count, void* data, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count; index += step)
    store<T>(data, index, f(index));
}

// (out[2p], out[2p + 1]) = f(p) for a contiguous out, the second dropped past the end.
template <class T, class C, class F>
__global__ void pair_kernel(int64_t count, void* data, F f) {
  const int64_t pairs = (count + 1) / 2;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t pair = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; pair < pairs; pair += step) {
    C first, second;
    f(pair, first, second);
    store<T>(data, 2 * pair, first);
    if (2 * pair + 1 < count) store<T>(data, 2 * pair + 1, second);
  }
}

// Launches `kernel` over `items` threads' worth of work on out's device and current stream.
template <class Kernel, class... Args>
void launch_on(const char* op, const Tensor& out, int64_t items, Kernel kernel, Args... args) {
  STRATA_INTERNAL_ASSERT(out.is_contiguous(), "[", op, "] expected a fresh contiguous output");
  if (items == 0) return;
  const int device = out.device().index();
  DeviceScope scope(device);
  const LaunchShape shape = launch_shape(items);
  kernel<<<shape.blocks, shape.threads, 0, current_native_stream(device)>>>(args...);
  check_cuda(cudaGetLastError(), op);
}

template <class T, class F>
void launch_indexed(const char* op, const F& f, const Tensor& out) {
  launch_on(op, out, out.numel(), indexed_kernel<T, F>, out.numel(), out.data_ptr(), f);
}

// The (seed, offset) of `numbers` numbers reserved from out's device generator.
std::pair<uint64_t, uint64_t> reserve_numbers(const Tensor& out, uint64_t numbers, const char* op) {
  check_not_capturing_random(out.device().index(), op);
  auto& generator = static_cast<PhiloxGenerator&>(default_generator(out.device()));
  std::lock_guard lock(generator.mutex);
  return generator.reserve_offset(numbers);
}

// Random bits per value: the dtype's mantissa width (Note [CUDA random numbers]).
template <class T>
constexpr int mantissa_digits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else if constexpr (std::is_same_v<T, float>) return 24;
  else return 53;
}

}  // namespace
}  // namespace cuda::detail

namespace {

using cuda::detail::launch_indexed;

// CUDA compute (Note [Structured ops]): each fills the fresh contiguous tensor the shape
// function in ops/shapes/creation.h describes. All-zero bytes are zero in every dtype.
void zeros_out_cuda(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                    std::optional<Device>, std::optional<bool>) {
  if (out.numel() == 0) return;
  const int device = out.device().index();
  cuda::detail::DeviceScope scope(device);
  cuda::detail::check_cuda(cudaMemsetAsync(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()),
                                           cuda::detail::current_native_stream(device)),
                           "zeros");
}

void ones_out_cuda(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                   std::optional<Device>, std::optional<bool>) {
  cuda::detail::fill_kernel(out, 1, "ones");
}

void full_out_cuda(const Tensor& out, IntArrayRef, const Scalar& value, std::optional<ScalarType>,
                   std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  cuda::detail::fill_kernel(out, value, "full");
}

void arange_start_step_out_cuda(const Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step,
                                std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>,
                                std::optional<bool>) {
  visit_dtype(out.dtype(), [&]<class T>() {
    if (shapes::arange_is_integral(start, end, step)) {
      const cuda::detail::ArangeIntegralOp op{static_cast<uint64_t>(shapes::exact_integer(start)),
                                              static_cast<uint64_t>(shapes::exact_integer(step))};
      launch_indexed<T>("arange", op, out);
    } else {
      launch_indexed<T>("arange", cuda::detail::ArangeFloatingOp{start.to_double(), step.to_double()}, out);
    }
  });
}

void linspace_out_cuda(const Tensor& out, const Scalar& start, const Scalar& end, int64_t steps,
                       std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  const cuda::detail::LinspaceOp op = cuda::detail::linspace_op(start.to_double(), end.to_double(), steps);
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) launch_indexed<T>("linspace", op, out);
  });
}

void eye_m_out_cuda(const Tensor& out, int64_t, int64_t m, std::optional<ScalarType>, std::optional<Layout>,
                    std::optional<Device>, std::optional<bool>) {
  visit_dtype(out.dtype(), [&]<class T>() { launch_indexed<T>("eye", cuda::detail::EyeOp{m}, out); });
}

// Random values: Note [CUDA random numbers] in cuda/creation_ops.h.
void rand_out_cuda(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                   std::optional<Device>, std::optional<bool>) {
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>)) {
      constexpr int digits = cuda::detail::mantissa_digits<T>();
      const uint64_t numbers = static_cast<uint64_t>(out.numel()) * cuda::detail::kNumbersPerElement<digits>;
      const auto [seed, offset] = cuda::detail::reserve_numbers(out, numbers, "rand");
      launch_indexed<T>("rand", cuda::detail::RandOp<digits>{seed, offset}, out);
    }
  });
}

void randn_out_cuda(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                    std::optional<Device>, std::optional<bool>) {
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>)) {
      // Box-Muller's uniforms take 24 bits below float64, whatever the output's mantissa: with
      // float16's 11, u1 == 0 would zero one pair in 2048 and the tails would end near 3.9 sigma.
      constexpr int digits = std::is_same_v<T, double> ? 53 : 24;
      using C = std::conditional_t<digits == 53, double, float>;
      using Op = cuda::detail::RandnPairOp<digits>;
      const int64_t pairs = (out.numel() + 1) / 2;
      const uint64_t numbers = 2 * static_cast<uint64_t>(pairs) * cuda::detail::kNumbersPerElement<digits>;
      const auto [seed, offset] = cuda::detail::reserve_numbers(out, numbers, "randn");
      cuda::detail::launch_on("randn", out, pairs, cuda::detail::pair_kernel<T, C, Op>, out.numel(), out.data_ptr(),
                              Op{seed, offset});
    }
  });
}

void randint_low_out_cuda(const Tensor& out, int64_t low, int64_t high, IntArrayRef, std::optional<ScalarType>,
                          std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const auto [seed, offset] = cuda::detail::reserve_numbers(out, 2 * static_cast<uint64_t>(out.numel()), "randint");
  const cuda::detail::RandintOp op{seed, offset, low, range};
  visit_dtype(out.dtype(), [&]<class T>() { launch_indexed<T>("randint", op, out); });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("empty.memory_format", structured<&shapes::empty, nullptr>());
  m.impl("empty_strided", structured<&shapes::empty_strided, nullptr>());
  m.impl("zeros", structured<&shapes::zeros, &zeros_out_cuda>());
  m.impl("ones", structured<&shapes::ones, &ones_out_cuda>());
  m.impl("full", structured<&shapes::full, &full_out_cuda>());
  m.impl("arange.start_step", structured<&shapes::arange_start_step, &arange_start_step_out_cuda>());
  m.impl("rand", structured<&shapes::rand, &rand_out_cuda>());
  m.impl("randn", structured<&shapes::randn, &randn_out_cuda>());
  m.impl("linspace", structured<&shapes::linspace, &linspace_out_cuda>());
  m.impl("eye.m", structured<&shapes::eye_m, &eye_m_out_cuda>());
  m.impl("randint.low", structured<&shapes::randint_low, &randint_low_out_cuda>());
}

}  // namespace strata
