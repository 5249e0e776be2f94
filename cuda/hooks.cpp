// The CUDA backend's DeviceHooks: devices, streams, events, copies, allocators, generators.
// See Note [Device hooks] in tensor/device_hooks.cpp.
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include <strata/cuda/allocator.h>
#include <strata/cuda/host_allocator.h>
#include <strata/cuda/runtime.h>
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata::cuda::detail {
namespace {

// Note [No GPU is not an error]
// On a machine without a GPU, or without a driver new enough for this runtime,
// cudaGetDeviceCount fails ("CUDA driver version is insufficient for CUDA runtime version").
// strata still loads and runs on the CPU: the backend reports 0 devices and keeps the
// runtime's words, which every CUDA call then throws as "[cuda] CUDA is not available: ...".
// The runtime is asked once, on first use, not when the library loads.
struct DeviceCount {
  int count = 0;
  std::string unavailable_reason;
};

const DeviceCount& device_count_once() {
  static const DeviceCount answer = [] {
    DeviceCount result;
    const cudaError_t status = cudaGetDeviceCount(&result.count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      result.count = 0;
      result.unavailable_reason = cudaGetErrorString(status);
    } else if (result.count == 0) {
      result.unavailable_reason = "no CUDA device was found";
    } else if (result.count > kMaxDevices) {
      result.count = kMaxDevices;  // the rest are not served
    }
    return result;
  }();
  return answer;
}

cudaStream_t native(const Stream& stream) { return native_stream(stream.device().index(), stream.id()); }

class CudaHooks final : public DeviceHooks {
 public:
  DeviceType type() const override { return kCUDA; }
  int device_count() const override { return device_count_once().count; }
  std::string unavailable_reason() const override { return device_count_once().unavailable_reason; }

  int current_device() const override {
    // Callers ask before they check the range: without a device, say why there is none.
    strata::detail::check_device_in_range(*this, Device(kCUDA), "cuda.current_device");
    return detail::current_device();
  }
  void set_device(int index) const override { check_cuda(cudaSetDevice(index), "cuda.set_device"); }

  Stream default_stream(int device) const override { return Stream(Device(kCUDA, device), 0); }
  Stream current_stream(int device) const override { return Stream(Device(kCUDA, device), current_stream_id(device)); }
  Stream exchange_stream(const Stream& stream) const override {
    const int device = stream.device().index();
    return Stream(Device(kCUDA, device), exchange_current_stream_id(device, stream.id()));
  }
  Stream create_stream(int device) const override { return Stream(Device(kCUDA, device), create_pool_stream(device)); }
  // The default stream's native handle is null, which means the current device's: each call
  // on a stream runs with the stream's device current.
  bool query_stream(const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    const cudaError_t status = cudaStreamQuery(native(stream));
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check_cuda(status, "Stream.query");
    return true;
  }
  void synchronize_stream(const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    check_cuda(cudaStreamSynchronize(native(stream)), "Stream.synchronize");
  }

  void record_event(void** event, const Stream& stream, bool enable_timing) const override {
    DeviceScope scope(stream.device().index());
    if (!*event) {
      cudaEvent_t created = nullptr;
      check_cuda(cudaEventCreateWithFlags(&created, enable_timing ? cudaEventDefault : cudaEventDisableTiming),
                 "Event.record");
      *event = created;
    }
    check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(*event), native(stream)), "Event.record");
  }
  void block_event(void* event, const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    check_cuda(cudaStreamWaitEvent(native(stream), static_cast<cudaEvent_t>(event), 0), "Event.block");
  }
  bool query_event(void* event) const override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check_cuda(status, "Event.query");
    return true;
  }
  void synchronize_event(void* event) const override {
    check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "Event.synchronize");
  }
  double elapsed_time(void* start, void* end) const override {
    float milliseconds = 0;
    check_cuda(cudaEventElapsedTime(&milliseconds, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)),
               "Event.elapsed_time");
    return milliseconds;
  }
  void destroy_event(void* event, int device) const noexcept override {
    if (!event) return;
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device) (void)cudaSetDevice(device);
    (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
    if (previous != device) (void)cudaSetDevice(previous);
  }

  void synchronize(int device) const override {
    DeviceScope scope(device);
    check_cuda(cudaDeviceSynchronize(), "cuda.synchronize");
  }

  Allocator* allocator(int device) const override { return device_allocator(device); }
  MemoryStats memory_stats(int device) const override { return device_memory_stats(device); }
  void empty_cache() const override {
    empty_device_cache();
    empty_host_cache();
  }

  Generator& default_generator(int device) const override {
    std::call_once(generators_created_, [this] {
      for (int index = 0; index < device_count(); ++index)
        generators_[static_cast<size_t>(index)] = std::make_unique<PhiloxGenerator>(Device(kCUDA, index));
    });
    return *generators_[static_cast<size_t>(device)];
  }

  Allocator* host_allocator() const override { return detail::host_allocator(); }
  bool is_pinned(const void* data) const override { return detail::is_pinned(data); }
  void record_stream(void* data, const Stream& stream) const override {
    if (detail::is_pinned(data)) {
      record_host_use(data, stream.device().index(), native(stream));
      return;
    }
    detail::record_stream(data, stream.device().index(), stream.id());
  }

  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                  const Stream* stream, bool non_blocking) const override;

 private:
  mutable std::once_flag generators_created_;
  mutable std::array<std::unique_ptr<PhiloxGenerator>, kMaxDevices> generators_;
};

// A one-shot event recorded on `stream` of `device`. cudaEventDestroy may come before the event
// completes: the driver releases it once it has.
class RecordedEvent {
 public:
  RecordedEvent(int device, cudaStream_t stream) {
    DeviceScope scope(device);
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "copy_");
    const cudaError_t status = cudaEventRecord(event_, stream);
    if (status != cudaSuccess) (void)cudaEventDestroy(event_);
    check_cuda(status, "copy_");
  }
  ~RecordedEvent() { (void)cudaEventDestroy(event_); }
  RecordedEvent(const RecordedEvent&) = delete;
  RecordedEvent& operator=(const RecordedEvent&) = delete;
  void block(int device, cudaStream_t stream) const {
    DeviceScope scope(device);
    check_cuda(cudaStreamWaitEvent(stream, event_, 0), "copy_");
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// Note [Copies between two GPUs]
// Host <-> device copies go on the device's stream (see Note [Pinned host memory]); without
// non_blocking the host waits for them. A copy between two devices runs on the source's stream
// and never makes the host wait, whatever non_blocking says (as in PyTorch: no host memory takes
// part, and each side's work is ordered by its streams). The two streams meet at a two-way
// barrier: the copy waits for what the destination's current stream queued before it (work that
// may still read or write dst), and the destination's stream waits for the copy before running
// anything queued after it. Memory freed on either side afterwards is reused on its own stream,
// which is ordered after the copy by the same barrier.
void CudaHooks::copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                           const Stream* stream, bool non_blocking) const {
  const Device device = src_device.is_cuda() ? src_device : dst_device;
  DeviceScope scope(device.index());
  const cudaStream_t native_stream = stream ? native(*stream) : current_native_stream(device.index());
  if (src_device.is_cuda() && dst_device.is_cuda() && src_device != dst_device) {
    const int dst_index = dst_device.index();
    const cudaStream_t dst_stream = current_native_stream(dst_index);
    RecordedEvent(dst_index, dst_stream).block(device.index(), native_stream);
    check_cuda(cudaMemcpyPeerAsync(dst, dst_index, src, src_device.index(), nbytes, native_stream), "copy_");
    RecordedEvent(device.index(), native_stream).block(dst_index, dst_stream);
    return;
  }
  check_cuda(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, native_stream), "copy_");
  // A pinned host block must outlive the copy even if its tensor dies first.
  if (non_blocking) record_host_use(src_device.is_cpu() ? src : dst, device.index(), native_stream);
  else check_cuda(cudaStreamSynchronize(native_stream), "copy_");
}

const CudaHooks cuda_hooks;
const strata::detail::DeviceHooksRegistration registration(kCUDA, &cuda_hooks);

}  // namespace
}  // namespace strata::cuda::detail
