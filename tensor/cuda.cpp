// cuda:: on the CUDA backend's DeviceHooks. See Note [Device hooks] in device_hooks.cpp.
#include <strata/tensor/cuda.h>

#include <atomic>

#include <strata/tensor/errors.h>

namespace strata::cuda {

namespace {
const DeviceHooks& hooks(std::string_view op) { return detail::require_device_hooks(kCUDA, op); }

// -1 names the current device.
Device resolve(const DeviceHooks& hooks, int device, std::string_view op) {
  STRATA_CHECK_VALUE(device >= -1, "[", op, "] expected a device index >= 0 (or -1 for the current device), got ",
                     device);
  if (device == -1) {
    detail::check_device_in_range(hooks, Device(kCUDA), op);  // says why there is none first
    device = hooks.current_device();
  }
  const Device resolved(kCUDA, device);
  detail::check_device_in_range(hooks, resolved, op);
  return resolved;
}
}  // namespace

bool is_available() { return device_count() > 0; }

int device_count() {
  const DeviceHooks* loaded = detail::device_hooks(kCUDA);
  return loaded ? loaded->device_count() : 0;
}

void synchronize(int device) {
  const DeviceHooks* loaded = detail::device_hooks(kCUDA);
  if (!loaded || loaded->device_count() == 0) return;
  loaded->synchronize(resolve(*loaded, device, "cuda.synchronize").index());
}

int current_device() {
  const DeviceHooks& loaded = hooks("cuda.current_device");
  detail::check_device_in_range(loaded, Device(kCUDA), "cuda.current_device");
  return loaded.current_device();
}

void set_device(int device) {
  const DeviceHooks& loaded = hooks("cuda.set_device");
  loaded.set_device(resolve(loaded, device, "cuda.set_device").index());
}

Stream::Stream(const strata::Stream& stream) : strata::Stream(stream) {
  STRATA_CHECK_VALUE(stream.device().is_cuda(), "[cuda.Stream] expected a stream on a CUDA device, got ", stream);
}

Stream Stream::create(int device) {
  return Stream(strata::Stream::create(resolve(hooks("cuda.Stream.create"), device, "cuda.Stream.create")));
}

Stream default_stream(int device) {
  return Stream(strata::Stream::default_stream(resolve(hooks("cuda.default_stream"), device, "cuda.default_stream")));
}

Stream current_stream(int device) {
  return Stream(strata::Stream::current_stream(resolve(hooks("cuda.current_stream"), device, "cuda.current_stream")));
}

namespace {
std::atomic<bool> tf32_allowed{false};  // See Note [TF32 in matmul] in cuda.h
}  // namespace

void set_allow_tf32(bool allow) { tf32_allowed.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return tf32_allowed.load(std::memory_order_relaxed); }

void empty_cache() { hooks("cuda.empty_cache").empty_cache(); }

MemoryStats memory_stats(int device) {
  const DeviceHooks& loaded = hooks("cuda.memory_stats");
  return loaded.memory_stats(resolve(loaded, device, "cuda.memory_stats").index());
}

}  // namespace strata::cuda
