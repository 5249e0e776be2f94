#pragma once
// Streams: ordered queues of work on one device, and the guard that makes one current.
#include <cstdint>
#include <ostream>

#include <strata/tensor/device.h>

namespace strata {

// Note [Streams as values]
// A Stream is a device and an id that the device's backend gives meaning to (a CUDA backend
// keeps the native handle behind it). Id 0 is the device's default stream. A CPU or Meta
// stream is just a name: work on it is done when it returns, so query() is true and
// synchronize() returns at once. Everything else goes to the device's hooks, so a Stream
// outlives nothing: it is as cheap to copy as a Device.
class Stream {
 public:
  Stream(Device device, int64_t id) : device_(device), id_(id) {}

  Device device() const { return device_; }
  int64_t id() const { return id_; }
  bool is_default() const { return id_ == 0; }

  // True when all work queued on the stream so far has finished.
  bool query() const;
  // Waits until all work queued on the stream so far has finished.
  void synchronize() const;

  // A new stream on `device` (CUDA needs a loaded backend; throws Error otherwise).
  static Stream create(Device device);
  static Stream default_stream(Device device);
  // The stream work on `device` goes to now (the default one unless a StreamGuard says otherwise).
  static Stream current_stream(Device device);

  bool operator==(const Stream& other) const { return device_ == other.device_ && id_ == other.id_; }
  bool operator!=(const Stream& other) const { return !(*this == other); }

 private:
  Device device_;
  int64_t id_;
};

std::ostream& operator<<(std::ostream& out, const Stream& stream);  // "stream 3 on cuda:1"

class DeviceHooks;

// Makes `stream` the current stream of its device, and its device the current device, for a
// scope; both are restored on exit. A no-op for CPU and Meta streams.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

  Stream original_stream() const { return original_stream_; }
  Stream current_stream() const { return current_stream_; }

 private:
  const DeviceHooks* hooks_ = nullptr;  // null for CPU and Meta
  Stream original_stream_;
  Stream current_stream_;
  int original_device_ = 0;
};

}  // namespace strata
