#pragma once
// DeviceHooks: everything tensor/ needs from a device backend, registered when the backend
// library loads. See Note [Device hooks] in device_hooks.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <strata/tensor/device.h>
#include <strata/tensor/generator.h>
#include <strata/tensor/storage.h>
#include <strata/tensor/stream.h>

namespace strata {

// What a device's allocator reports (cuda::memory_stats).
struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live storages
  int64_t reserved_bytes = 0;        // taken from the device: allocated plus cached
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes has been
  int64_t device_mallocs = 0;        // calls to the device's own allocation (cudaMalloc)
};

// One object per device type, filled by its backend. Device indices passed in are checked
// against device_count() before a hook is called; streams and events passed in belong to the
// backend's device type. Hooks may be called from any thread.
class DeviceHooks {
 public:
  virtual ~DeviceHooks() = default;

  virtual DeviceType type() const = 0;
  // Devices present (0 when the backend loaded but found none).
  virtual int device_count() const = 0;
  // Why device_count() is 0 (no driver, no device), for error messages; empty when unknown.
  virtual std::string unavailable_reason() const { return {}; }

  // The calling thread's current device.
  virtual int current_device() const = 0;
  virtual void set_device(int index) const = 0;
  // Sets the current device and returns the previous one.
  virtual int exchange_device(int index) const;

  virtual Stream default_stream(int device) const = 0;
  virtual Stream current_stream(int device) const = 0;
  // Makes `stream` the current stream of its device (on the calling thread); returns the previous.
  virtual Stream exchange_stream(const Stream& stream) const = 0;
  virtual Stream create_stream(int device) const = 0;
  virtual bool query_stream(const Stream& stream) const = 0;
  virtual void synchronize_stream(const Stream& stream) const = 0;

  // Events are opaque handles. record_event makes one on the stream's device when *event is null.
  virtual void record_event(void** event, const Stream& stream, bool enable_timing) const = 0;
  virtual void block_event(void* event, const Stream& stream) const = 0;
  virtual bool query_event(void* event) const = 0;
  virtual void synchronize_event(void* event) const = 0;
  // Milliseconds from `start` to `end`.
  virtual double elapsed_time(void* start, void* end) const = 0;
  virtual void destroy_event(void* event, int device) const noexcept = 0;

  // Waits for all work on `device`.
  virtual void synchronize(int device) const = 0;

  // The allocator of one device; its DataPtrs carry Device(type(), device).
  virtual Allocator* allocator(int device) const = 0;
  virtual MemoryStats memory_stats(int device) const = 0;
  // Returns the cached, unused memory of every device to the system.
  virtual void empty_cache() const = 0;

  virtual Generator& default_generator(int device) const = 0;

  // Page-locked ("pinned") host memory: DataPtrs on the CPU device that the device copies to and
  // from asynchronously. Null when the backend has none (pin_memory then throws).
  virtual Allocator* host_allocator() const { return nullptr; }
  // True when `data` lies in memory from host_allocator().
  virtual bool is_pinned(const void* /*data*/) const { return false; }
  // The block `data` starts (from allocator(device) or host_allocator()) is also used by work
  // queued on `stream`: it is not handed out again before that work has finished.
  virtual void record_stream(void* /*data*/, const Stream& /*stream*/) const {}

  // Moves nbytes between host and device memory or between two devices of this type. With
  // non_blocking the call may return before the copy is done; it is then ordered on `stream`
  // (the current stream of the device involved when null; the source's for device to device).
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                          const Stream* stream, bool non_blocking) const = 0;
};

namespace detail {
// Registers `hooks` for `type` (not CPU or Meta: tensor/ serves those itself). Throws Error
// when hooks for `type` are already registered. `hooks` must stay alive until unregistered.
void register_device_hooks(DeviceType type, const DeviceHooks* hooks);
// Unregisters `hooks` if they are the ones registered for `type`; a backend calls this when it
// unloads. Nothing may use the backend's tensors, streams or events afterwards.
void unregister_device_hooks(DeviceType type, const DeviceHooks* hooks) noexcept;
// Puts `hooks` (may be null) in place of whatever is registered for `type` and returns that:
// for tests that stand a fake backend in for the real one, or take it away, for a scope.
const DeviceHooks* exchange_device_hooks(DeviceType type, const DeviceHooks* hooks);

// The hooks registered for `type`, or null.
const DeviceHooks* device_hooks(DeviceType type) noexcept;
// The hooks registered for `type`; throws Error "[op] no CUDA backend is loaded" otherwise.
const DeviceHooks& require_device_hooks(DeviceType type, std::string_view op);
// Throws Error unless device.index() < hooks.device_count() ("CUDA is not available: <reason>"
// when there is none).
void check_device_in_range(const DeviceHooks& hooks, Device device, std::string_view op);

// Registers hooks for the lifetime of a static object in the backend library:
//   static const detail::DeviceHooksRegistration registration(kCUDA, &cuda_hooks);
class DeviceHooksRegistration {
 public:
  DeviceHooksRegistration(DeviceType type, const DeviceHooks* hooks) : type_(type), hooks_(hooks) {
    register_device_hooks(type, hooks);
  }
  ~DeviceHooksRegistration() { unregister_device_hooks(type_, hooks_); }
  DeviceHooksRegistration(const DeviceHooksRegistration&) = delete;
  DeviceHooksRegistration& operator=(const DeviceHooksRegistration&) = delete;

 private:
  DeviceType type_;
  const DeviceHooks* hooks_;
};
}  // namespace detail

}  // namespace strata
