// Tests for tensor/device_guard.cpp: the current device for a scope, on the fake CUDA backend.
#include <doctest/doctest.h>

#include <strata/tensor/cuda.h>
#include <strata/tensor/device_guard.h>
#include <strata/tensor/errors.h>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;

TEST_CASE("DeviceGuard: sets the device for a scope and restores it") {
  FakeCudaBackend backend;
  CHECK(cuda::current_device() == 0);
  {
    DeviceGuard guard(Device(kCUDA, 1));
    CHECK(cuda::current_device() == 1);
    CHECK(guard.original_device() == Device(kCUDA, 0));
    CHECK(guard.current_device() == Device(kCUDA, 1));
  }
  CHECK(cuda::current_device() == 0);
}

TEST_CASE("DeviceGuard: nested guards restore in order") {
  FakeCudaBackend backend;
  cuda::set_device(1);
  {
    DeviceGuard outer(Device(kCUDA, 0));
    CHECK(cuda::current_device() == 0);
    {
      DeviceGuard inner(Device(kCUDA, 1));
      CHECK(cuda::current_device() == 1);
      CHECK(inner.original_device() == Device(kCUDA, 0));
    }
    CHECK(cuda::current_device() == 0);
  }
  CHECK(cuda::current_device() == 1);
}

TEST_CASE("DeviceGuard: restores even when the scope changed the device itself") {
  FakeCudaBackend backend;
  {
    DeviceGuard guard(Device(kCUDA, 0));
    cuda::set_device(1);
  }
  CHECK(cuda::current_device() == 0);
}

TEST_CASE("DeviceGuard: set_device switches within the scope; the original is restored") {
  FakeCudaBackend backend;
  {
    DeviceGuard guard(Device(kCUDA, 0));
    guard.set_device(Device(kCUDA, 1));
    CHECK(cuda::current_device() == 1);
    CHECK(guard.current_device() == Device(kCUDA, 1));
    CHECK_THROWS_AS(guard.set_device(Device(kCPU)), ValueError);
    CHECK_THROWS_AS(guard.set_device(Device(kCUDA, 5)), IndexError);
  }
  CHECK(cuda::current_device() == 0);
}

TEST_CASE("DeviceGuard: CPU and Meta devices are no-ops, with or without a backend") {
  {
    DeviceGuard cpu{Device(kCPU)};
    DeviceGuard meta{Device(kMeta)};
    CHECK(cpu.original_device() == Device(kCPU));
  }
  FakeCudaBackend backend;
  const int calls = backend.hooks.set_device_calls;
  {
    DeviceGuard cpu{Device(kCPU)};
    CHECK(cpu.current_device() == Device(kCPU));
  }
  CHECK(backend.hooks.set_device_calls == calls);
}

TEST_CASE("DeviceGuard: a device past the count throws and changes nothing") {
  FakeCudaBackend backend;
  CHECK_THROWS_WITH_AS(DeviceGuard(Device(kCUDA, 2)), "[DeviceGuard] cuda:2 is out of range: there are 2 CUDA devices",
                       IndexError);
  CHECK(cuda::current_device() == 0);
}

TEST_CASE("DeviceGuard: without a backend a CUDA device throws Error") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK_THROWS_WITH_AS(DeviceGuard(Device(kCUDA, 1)), "[cuda] no CUDA backend is loaded (DeviceGuard needs one)",
                       Error);
}
