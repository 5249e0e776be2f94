// Tests for cuda/optim.cu through the public API: the CUDA list overloads of the fused
// optimizer steps (Note [Multi-tensor optimizer steps] in ops/optim.cpp) are bit-identical to
// the CPU's for float32 and float64, over lists that take several launches, mixed dtypes and
// per-entry steps; the optimizers make the same steps on either device. Without a usable GPU
// the cases report themselves skipped.
#include <doctest/doctest.h>

#include <strata/nn/optim.h>
#include <strata/ops/optim.h>
#include <strata/strata.h>

#include <vector>

using namespace strata;

namespace {
const bool gpu_missing = !cuda::is_available();

// 30 entries (more than one launch holds), sizes from 0-d and empty to several chunks.
std::vector<std::vector<int64_t>> list_shapes() {
  std::vector<std::vector<int64_t>> shapes = {{}, {0}, {65536 * 2 + 7}, {3, 5}, {1}};
  for (int64_t i = 0; i < 25; ++i) shapes.push_back({(i * 7919) % 20000 + 1});
  return shapes;
}

tensor_list random_list(ScalarType dtype, double scale, bool positive = false) {
  tensor_list out;
  for (const auto& shape : list_shapes()) {
    Tensor t = randn(shape, dtype) * scale;
    out.push_back(positive ? abs(t) : t);
  }
  return out;
}

tensor_list to_device(const tensor_list& list, Device device) {
  tensor_list out;
  for (const Tensor& t : list) out.push_back(t.to(device).clone());
  return out;
}

void check_same_bits(const tensor_list& cuda_list, const tensor_list& cpu_list) {
  REQUIRE(cuda_list.size() == cpu_list.size());
  for (size_t i = 0; i < cpu_list.size(); ++i) {
    INFO("entry ", i);
    CHECK(equal(cuda_list[i].cpu(), cpu_list[i]));
  }
}
}  // namespace

TEST_CASE("cuda optim: _fused_sgd_.list equals the CPU bit for bit" * doctest::skip(gpu_missing)) {
  manual_seed(21);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (bool nesterov : {false, true}) {
      INFO("dtype ", dtype, " nesterov ", nesterov);
      const tensor_list params = random_list(dtype, 1), grads = random_list(dtype, 0.1),
                        buffers = random_list(dtype, 0.1);
      const tensor_list cpu_params = to_device(params, kCPU), cpu_buffers = to_device(buffers, kCPU);
      const tensor_list gpu_params = to_device(params, kCUDA), gpu_grads = to_device(grads, kCUDA),
                        gpu_buffers = to_device(buffers, kCUDA);
      for (bool first : {true, false}) {
        _fused_sgd_(cpu_params, grads, cpu_buffers, 0.05, 0.9, 0, 0.01, nesterov, !nesterov, first);
        _fused_sgd_(gpu_params, gpu_grads, gpu_buffers, 0.05, 0.9, 0, 0.01, nesterov, !nesterov, first);
      }
      check_same_bits(gpu_params, cpu_params);
      check_same_bits(gpu_buffers, cpu_buffers);
    }
  }
}

TEST_CASE("cuda optim: _fused_adam_.list equals the CPU bit for bit, each entry at its own step" *
          doctest::skip(gpu_missing)) {
  manual_seed(22);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (bool amsgrad : {false, true}) {
      INFO("dtype ", dtype, " amsgrad ", amsgrad);
      const tensor_list params = random_list(dtype, 1), grads = random_list(dtype, 0.1);
      tensor_list cpu[4] = {to_device(params, kCPU), random_list(dtype, 0.01), random_list(dtype, 0.01, true),
                            random_list(dtype, 0.01, true)};
      tensor_list gpu[4];
      for (int k = 0; k < 4; ++k) gpu[k] = to_device(cpu[k], kCUDA);
      const tensor_list gpu_grads = to_device(grads, kCUDA);
      std::vector<int64_t> steps;
      for (size_t i = 0; i < params.size(); ++i) steps.push_back(static_cast<int64_t>(i % 4) + 1);
      for (bool decoupled : {false, true}) {
        _fused_adam_(cpu[0], grads, cpu[1], cpu[2], amsgrad ? cpu[3] : tensor_list{}, steps, 0.01, 0.9, 0.999, 0.05,
                     1e-8, amsgrad, false, decoupled);
        _fused_adam_(gpu[0], gpu_grads, gpu[1], gpu[2], amsgrad ? gpu[3] : tensor_list{}, steps, 0.01, 0.9, 0.999,
                     0.05, 1e-8, amsgrad, false, decoupled);
        for (int64_t& step : steps) ++step;
      }
      for (int k = 0; k < 4; ++k) check_same_bits(gpu[k], cpu[k]);
    }
  }
}

TEST_CASE("cuda optim: a list of mixed dtypes and strided entries" * doctest::skip(gpu_missing)) {
  manual_seed(23);
  const Tensor base = randn({4, 6});
  const tensor_list cpu_params = {base.clone().transpose(0, 1), randn({1000}, kFloat64), randn({33}, kFloat16)};
  const tensor_list grads = {randn({6, 4}), randn({1000}, kFloat64), randn({33}, kFloat16)};
  const tensor_list gpu_params = {base.to(kCUDA).clone().transpose(0, 1), cpu_params[1].to(kCUDA).clone(),
                                  cpu_params[2].to(kCUDA).clone()};
  REQUIRE_FALSE(gpu_params[0].is_contiguous());
  const tensor_list gpu_grads = to_device(grads, kCUDA);
  _fused_sgd_(cpu_params, grads, tensor_list{}, 0.1, 0, 0, 0.01, false, false, true);
  _fused_sgd_(gpu_params, gpu_grads, tensor_list{}, 0.1, 0, 0, 0.01, false, false, true);
  CHECK(equal(gpu_params[0].cpu(), cpu_params[0]));
  CHECK(equal(gpu_params[1].cpu(), cpu_params[1]));
  CHECK(allclose(gpu_params[2].cpu().to(kFloat32), cpu_params[2].to(kFloat32), 1e-3, 1e-3));
  CHECK_FALSE(equal(cpu_params[0], base.transpose(0, 1)));
}

TEST_CASE("cuda optim: params on two devices in one list, or a grad on the CPU, name the entry" *
          doctest::skip(gpu_missing)) {
  const Tensor gpu = ones({3}, kCUDA), cpu = ones({3});
  CHECK_THROWS_WITH_AS(_fused_sgd_(tensor_list{gpu, cpu}, tensor_list{gpu, cpu}, tensor_list{}, 0.1, 0, 0, 0, false,
                                   false, true),
                       doctest::Contains("params[1] on cpu"), Error);
  CHECK_THROWS_WITH_AS(_fused_sgd_(tensor_list{gpu}, tensor_list{cpu}, tensor_list{}, 0.1, 0, 0, 0, false, false, true),
                       doctest::Contains("grads[0] on cpu"), Error);
}

TEST_CASE("cuda optim: Adam and SGD on CUDA make the CPU's steps bit for bit" * doctest::skip(gpu_missing)) {
  manual_seed(24);
  tensor_list cpu_params = {randn({7, 5}), randn({5}), randn({70000}), randn({})};
  tensor_list gpu_params;
  for (Tensor& p : cpu_params) {
    p.requires_grad_();
    gpu_params.push_back(p.detach().to(kCUDA).requires_grad_());
  }
  optim::AdamW cpu_adam(cpu_params, optim::AdamWOptions(1e-2).amsgrad(true));
  optim::AdamW gpu_adam(gpu_params, optim::AdamWOptions(1e-2).amsgrad(true));
  optim::SGD cpu_sgd(cpu_params, optim::SGDOptions(1e-2).momentum(0.9).nesterov(true));
  optim::SGD gpu_sgd(gpu_params, optim::SGDOptions(1e-2).momentum(0.9).nesterov(true));
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      // Parameter 1 misses a gradient on the first step, so its state starts a step later.
      if (step == 0 && i == 1) continue;
      const Tensor g = randn(cpu_params[i].sizes()) * 0.1;
      cpu_params[i].set_grad(g);
      gpu_params[i].set_grad(g.to(kCUDA));
    }
    cpu_adam.step();
    gpu_adam.step();
    cpu_sgd.step();
    gpu_sgd.step();
  }
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    INFO("param ", i);
    CHECK(equal(gpu_params[i].detach().cpu(), cpu_params[i].detach()));
  }
}
