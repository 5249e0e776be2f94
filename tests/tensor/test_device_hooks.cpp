// Tests for tensor/device_hooks.cpp: registering a backend's hooks, and what tensor/ answers
// with and without them.
#include <doctest/doctest.h>

#include <strata/tensor/cuda.h>
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;
using strata::testing::FakeCudaHooks;

namespace {
std::string error_of(auto&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("device hooks: none are registered by default") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK(detail::device_hooks(kCUDA) == nullptr);
  CHECK(detail::device_hooks(kCPU) == nullptr);
  CHECK(error_of([] { detail::require_device_hooks(kCUDA, "my_op"); }) ==
        "[cuda] no CUDA backend is loaded (my_op needs one)");
}

TEST_CASE("device hooks: registration is found with one lookup and undone by unregistering") {
  strata::testing::NoCudaBackend no_backend;  // these tests register hooks of their own
  FakeCudaHooks hooks;
  detail::register_device_hooks(kCUDA, &hooks);
  CHECK(detail::device_hooks(kCUDA) == &hooks);
  CHECK(&detail::require_device_hooks(kCUDA, "my_op") == &hooks);
  CHECK(cuda::device_count() == 2);
  detail::unregister_device_hooks(kCUDA, &hooks);
  CHECK(detail::device_hooks(kCUDA) == nullptr);
  CHECK(cuda::device_count() == 0);
}

TEST_CASE("device hooks: a second backend for one type is refused; the first stays") {
  strata::testing::NoCudaBackend no_backend;  // these tests register hooks of their own
  FakeCudaHooks first, second;
  detail::register_device_hooks(kCUDA, &first);
  CHECK_THROWS_WITH_AS(detail::register_device_hooks(kCUDA, &second),
                       "[register_device_hooks] a CUDA backend is already loaded", Error);
  detail::unregister_device_hooks(kCUDA, &second);  // not the registered ones: nothing happens
  CHECK(detail::device_hooks(kCUDA) == &first);
  detail::unregister_device_hooks(kCUDA, &first);
  CHECK(detail::device_hooks(kCUDA) == nullptr);
}

TEST_CASE("device hooks: CPU and Meta take none, and hooks must match their type") {
  strata::testing::NoCudaBackend no_backend;  // these tests register hooks of their own
  FakeCudaHooks hooks;
  CHECK_THROWS_WITH_AS(detail::register_device_hooks(kCPU, &hooks),
                       "[register_device_hooks] cpu devices are served by tensor/ itself and take no hooks",
                       ValueError);
  CHECK_THROWS_AS(detail::register_device_hooks(kMeta, &hooks), ValueError);
  CHECK_THROWS_AS(detail::register_device_hooks(kCUDA, nullptr), ValueError);
  CHECK(detail::device_hooks(kCUDA) == nullptr);
}

TEST_CASE("device hooks: the registration object registers for its lifetime") {
  strata::testing::NoCudaBackend no_backend;  // these tests register hooks of their own
  FakeCudaHooks hooks;
  {
    const detail::DeviceHooksRegistration registration(kCUDA, &hooks);
    CHECK(detail::device_hooks(kCUDA) == &hooks);
    CHECK(cuda::is_available());
  }
  CHECK(detail::device_hooks(kCUDA) == nullptr);
  CHECK_FALSE(cuda::is_available());
}

TEST_CASE("device hooks: a backend that sees no device is loaded but not available") {
  FakeCudaBackend backend;
  backend.hooks.visible_devices = 0;
  CHECK_FALSE(cuda::is_available());
  CHECK(cuda::device_count() == 0);
  cuda::synchronize();  // nothing to wait for
  CHECK(error_of([] { cuda::current_device(); }) ==
        "[cuda] no CUDA device is present (cuda.current_device needs one)");
  CHECK_THROWS_AS(make_storage(4, Device(kCUDA)), Error);
  backend.hooks.visible_devices = FakeCudaHooks::kDevices;
}

TEST_CASE("device hooks: indices past the device count throw IndexError") {
  FakeCudaBackend backend;
  CHECK_THROWS_WITH_AS(detail::check_device_in_range(backend.hooks, Device(kCUDA, 2), "my_op"),
                       "[my_op] cuda:2 is out of range: there are 2 CUDA devices", IndexError);
  detail::check_device_in_range(backend.hooks, Device(kCUDA, 1), "my_op");
}

TEST_CASE("device hooks: exchange_device returns the previous device and sets the new one") {
  FakeCudaBackend backend;
  const DeviceHooks& hooks = backend.hooks;
  CHECK(hooks.exchange_device(1) == 0);
  CHECK(hooks.current_device() == 1);
  const int calls = backend.hooks.set_device_calls;
  CHECK(hooks.exchange_device(1) == 1);  // already there: no call to set_device
  CHECK(backend.hooks.set_device_calls == calls);
}

TEST_CASE("device hooks: of backends registering at once, exactly one wins") {
  strata::testing::NoCudaBackend no_backend;  // these tests register hooks of their own
  constexpr int kThreads = 8;
  std::vector<std::unique_ptr<FakeCudaHooks>> candidates;
  for (int i = 0; i < kThreads; ++i) candidates.push_back(std::make_unique<FakeCudaHooks>());
  std::atomic<int> winners{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        detail::register_device_hooks(kCUDA, candidates[static_cast<size_t>(i)].get());
        ++winners;
      } catch (const Error&) {
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(winners == 1);
  const DeviceHooks* registered = detail::device_hooks(kCUDA);
  REQUIRE(registered != nullptr);
  for (auto& candidate : candidates) detail::unregister_device_hooks(kCUDA, candidate.get());
  CHECK(detail::device_hooks(kCUDA) == nullptr);
}
