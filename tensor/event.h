#pragma once
// Events: markers recorded on a stream, to wait for or time the work queued before them.
#include <strata/tensor/device.h>
#include <strata/tensor/stream.h>

namespace strata {

// Like c10::Event: created for a device type, bound to a device by its first record() (the
// backend makes the native event then), destroyed with the object. An event never recorded
// counts as complete. Move-only. Needs the device type's backend for everything but query()
// and synchronize() on an event never recorded.
class Event {
 public:
  explicit Event(DeviceType type = kCUDA, bool enable_timing = false) : type_(type), enable_timing_(enable_timing) {}
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  DeviceType device_type() const { return type_; }
  // The device of the first record; throws Error before it.
  Device device() const;
  bool is_recorded() const { return handle_ != nullptr; }

  // Marks the point after all work queued on `stream` so far (the current stream by default).
  void record(const Stream& stream);
  void record();
  // Makes future work on `stream` wait for this event (the host does not wait).
  void block(const Stream& stream) const;
  // True when the work before the last record has finished.
  bool query() const;
  // Waits on the host for the work before the last record.
  void synchronize() const;
  // Milliseconds between this event's completion and `end`'s; both need enable_timing.
  double elapsed_time(const Event& end) const;

 private:
  DeviceType type_;
  bool enable_timing_;
  int device_index_ = 0;
  void* handle_ = nullptr;  // the backend's event, made by the first record
};

}  // namespace strata
