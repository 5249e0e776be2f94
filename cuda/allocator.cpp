// The CUDA device allocators: the caching allocator's bookkeeping on cudaMalloc, cudaFree and
// CUDA events. See Note [CUDA caching allocator] in caching_allocator.h.
#include <strata/cuda/allocator.h>

#include <array>
#include <memory>
#include <mutex>

#include <strata/cuda/caching_allocator.h>
#include <strata/cuda/runtime.h>

namespace strata::cuda::detail {
namespace {

class CudaRawMemory final : public RawMemory {
 public:
  // A segment allocated while this thread captures a graph is not stream work, and the capture
  // pool keeps it for the graph (Note [Capture pools]): the relaxed mode lets cudaMalloc through.
  void* malloc(int device, size_t nbytes) override {
    DeviceScope scope(device);
    void* data = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cuda.malloc");
    const cudaError_t status = cudaMalloc(&data, nbytes);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    check_cuda(status, "cuda.malloc");
    return data;
  }
  // Runs inside storage deleters, possibly while the process exits and the runtime is being
  // torn down: failures are dropped, never thrown.
  void free(int device, void* data) override {
    int previous = -1;
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device) (void)cudaSetDevice(device);
    if (cudaFree(data) != cudaSuccess) (void)cudaGetLastError();
    if (previous >= 0 && previous != device) (void)cudaSetDevice(previous);
  }
  void* record_event(int device, StreamId stream) override {
    DeviceScope scope(device);
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "record_stream");
    check_cuda(cudaEventRecord(event, native_stream(device, stream)), "record_stream");
    return event;
  }
  bool query_event(void* event) override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check_cuda(status, "record_stream");
    return true;
  }
  void synchronize_event(void* event) override {
    check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "record_stream");
  }
  void destroy_event(void* event) override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
};

// Made on first use and never destroyed: storages may be freed during static destruction.
CachingAllocator& caching_allocator() {
  static CachingAllocator* const allocator = new CachingAllocator(*new CudaRawMemory, kMaxDevices);
  return *allocator;
}

// A storage's deleter, which must not throw: when freeing fails (recording a record_stream event
// after a device error), the block stays allocated, its memory kept rather than reused too early.
void release_block(void* data, void* /*context*/, size_t /*nbytes*/) noexcept {
  try {
    caching_allocator().free(data);
  } catch (...) {
  }
}

class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  DataPtr allocate(size_t nbytes) override {
    void* data = caching_allocator().allocate(device_, nbytes, current_stream_id(device_));
    return DataPtr{data, &release_block, nullptr, Device(kCUDA, device_)};
  }

 private:
  int device_;
};
}  // namespace

Allocator* device_allocator(int device) {
  static std::array<std::unique_ptr<DeviceAllocator>, kMaxDevices> allocators;
  static std::once_flag made;
  std::call_once(made, [] {
    for (int index = 0; index < kMaxDevices; ++index)
      allocators[static_cast<size_t>(index)] = std::make_unique<DeviceAllocator>(index);
  });
  return allocators[static_cast<size_t>(device)].get();
}

MemoryStats device_memory_stats(int device) {
  const AllocatorStats stats = caching_allocator().stats(device);
  return MemoryStats{stats.allocated_bytes, stats.reserved_bytes, stats.peak_allocated_bytes, stats.device_mallocs};
}

void empty_device_cache() { caching_allocator().empty_cache(); }

void record_stream(void* data, int /*device*/, int64_t stream_id) { caching_allocator().record_stream(data, stream_id); }

uint64_t begin_capture_pool(int device, int64_t stream_id) { return caching_allocator().begin_capture(device, stream_id); }
void end_capture_pool(int device, int64_t stream_id) { caching_allocator().end_capture(device, stream_id); }
void release_capture_pool(int device, uint64_t pool) { caching_allocator().release_pool(device, pool); }

}  // namespace strata::cuda::detail
