// Tests for cuda/optim_step.h on the host: the element steps the CUDA fused optimizers run are
// bit-identical to the CPU's _fused_sgd_ / _fused_adam_, and the multi-tensor chunking covers
// every chunk once. See Note [Fused optimizer steps on CUDA].
// Like ops/optim.cpp, this file must not fuse a * b + c on its own (GCC does by default).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <doctest/doctest.h>

#include <strata/cuda/optim_step.h>
#include <strata/ops/optim.h>
#include <strata/strata.h>

#include <cstring>
#include <random>
#include <vector>

using namespace strata;
using namespace strata::cuda::detail;

namespace {

template <class C>
std::vector<C> random_values(size_t count, unsigned seed, double low, double high) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<C> values(count);
  for (C& value : values) value = static_cast<C>(distribution(generator));
  return values;
}

template <class C>
std::vector<C> values_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<C> values(static_cast<size_t>(c.numel()));
  std::memcpy(values.data(), c.data_ptr(), values.size() * sizeof(C));
  return values;
}

template <class C>
void check_bits(const std::vector<C>& actual, const std::vector<C>& expected) {
  REQUIRE(actual.size() == expected.size());
  size_t differing = 0;
  for (size_t i = 0; i < actual.size(); ++i) differing += std::memcmp(&actual[i], &expected[i], sizeof(C)) != 0;
  CHECK(differing == 0);
}

constexpr size_t kCount = 4096;

template <class C>
void check_sgd(double momentum, double dampening, double weight_decay, bool nesterov, bool maximize, bool first) {
  const ScalarType dtype = std::is_same_v<C, float> ? kFloat32 : kFloat64;
  std::vector<C> param = random_values<C>(kCount, 1, -2, 2), grad = random_values<C>(kCount, 2, -1, 1);
  std::vector<C> buffer = random_values<C>(kCount, 3, -1, 1);
  const Tensor p = tensor(param, dtype), g = tensor(grad, dtype), b = tensor(buffer, dtype);
  _fused_sgd_(p, g, momentum != 0 ? std::optional<Tensor>(b) : std::nullopt, 0.01, momentum, dampening, weight_decay,
              nesterov, maximize, first);
  const SgdConstants<C> k = sgd_constants<C>(0.01, momentum, dampening, weight_decay, nesterov, maximize, first);
  for (size_t i = 0; i < kCount; ++i) {
    const SgdElement<C> e = momentum != 0 ? sgd_step<C, true>(param[i], grad[i], buffer[i], k)
                                          : sgd_step<C, false>(param[i], grad[i], C(0), k);
    param[i] = e.param;
    if (momentum != 0) buffer[i] = e.buffer;
  }
  check_bits(values_of<C>(p), param);
  if (momentum != 0) check_bits(values_of<C>(b), buffer);
}

template <class C>
void check_adam(int64_t step, double weight_decay, bool amsgrad, bool maximize, bool decoupled, double beta1) {
  const ScalarType dtype = std::is_same_v<C, float> ? kFloat32 : kFloat64;
  std::vector<C> param = random_values<C>(kCount, 4, -2, 2), grad = random_values<C>(kCount, 5, -1, 1);
  std::vector<C> m = random_values<C>(kCount, 6, -0.1, 0.1), v = random_values<C>(kCount, 7, 0, 0.01);
  std::vector<C> max_v = random_values<C>(kCount, 8, 0, 0.01);
  const Tensor p = tensor(param, dtype), g = tensor(grad, dtype), tm = tensor(m, dtype), tv = tensor(v, dtype);
  const Tensor tmax = tensor(max_v, dtype);
  _fused_adam_(p, g, tm, tv, amsgrad ? std::optional<Tensor>(tmax) : std::nullopt, step, 1e-3, beta1, 0.999,
               weight_decay, 1e-8, amsgrad, maximize, decoupled);
  const AdamConstants<C> k = adam_constants<C>(step, 1e-3, beta1, 0.999, weight_decay, 1e-8, amsgrad, maximize, decoupled);
  for (size_t i = 0; i < kCount; ++i) {
    const AdamElement<C> e = amsgrad ? adam_step<C, true>(param[i], grad[i], m[i], v[i], max_v[i], k)
                                     : adam_step<C, false>(param[i], grad[i], m[i], v[i], C(0), k);
    param[i] = e.param, m[i] = e.exp_avg, v[i] = e.exp_avg_sq;
    if (amsgrad) max_v[i] = e.max_exp_avg_sq;
  }
  check_bits(values_of<C>(p), param);
  check_bits(values_of<C>(tm), m);
  check_bits(values_of<C>(tv), v);
  if (amsgrad) check_bits(values_of<C>(tmax), max_v);
}

}  // namespace

TEST_CASE_TEMPLATE("optim_step: sgd_step is bit-identical to the CPU's _fused_sgd_", C, float, double) {
  check_sgd<C>(0, 0, 0, false, false, false);
  check_sgd<C>(0, 0, 0.01, false, true, false);
  check_sgd<C>(0.9, 0.1, 0.01, false, false, false);
  check_sgd<C>(0.9, 0, 0.01, true, false, false);
  check_sgd<C>(0.9, 0.5, 0, true, true, true);  // first step: the buffer is d itself
}

TEST_CASE_TEMPLATE("optim_step: adam_step is bit-identical to the CPU's _fused_adam_", C, float, double) {
  check_adam<C>(1, 0, false, false, false, 0.9);
  check_adam<C>(7, 0.01, false, false, false, 0.9);   // L2 weight decay
  check_adam<C>(7, 0.01, false, false, true, 0.9);    // AdamW
  check_adam<C>(3, 0, true, false, false, 0.9);       // amsgrad
  check_adam<C>(3, 0.01, true, true, true, 0.9);      // everything, maximizing
  check_adam<C>(2, 0, false, false, false, 0.3);      // beta1 < 0.5: the other side of the lerp
}

TEST_CASE("optim_step: plan_multi_tensor gives every chunk of every tensor one block") {
  const std::vector<int64_t> numels{10, 0, 1, 25, 7, 40, 3};
  for (const auto& [max_tensors, max_blocks] : {std::pair{2, 3}, std::pair{3, 100}, std::pair{100, 1}, std::pair{100, 100}}) {
    INFO("max_tensors ", max_tensors, ", max_blocks ", max_blocks);
    const std::vector<MultiTensorLaunch> launches = plan_multi_tensor(numels, 8, max_tensors, max_blocks);
    std::vector<std::vector<int>> seen(numels.size());
    for (size_t t = 0; t < numels.size(); ++t) seen[t].assign(static_cast<size_t>((numels[t] + 7) / 8), 0);
    for (const MultiTensorLaunch& launch : launches) {
      CHECK(!launch.blocks.empty());
      CHECK(static_cast<int>(launch.tensors.size()) <= max_tensors);
      CHECK(static_cast<int>(launch.blocks.size()) <= max_blocks);
      for (const auto& [slot, chunk] : launch.blocks) {
        REQUIRE(slot >= 0);
        REQUIRE(slot < static_cast<int>(launch.tensors.size()));
        const auto tensor = static_cast<size_t>(launch.tensors[static_cast<size_t>(slot)]);
        REQUIRE(chunk < static_cast<int64_t>(seen[tensor].size()));
        ++seen[tensor][static_cast<size_t>(chunk)];
      }
    }
    for (const std::vector<int>& chunks : seen)
      for (int count : chunks) CHECK(count == 1);
  }
  CHECK(plan_multi_tensor(std::vector<int64_t>{0, 0}, 8, 4, 4).empty());
}
