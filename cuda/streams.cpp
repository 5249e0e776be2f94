// CUDA streams and the current device: what kernels launch on. See Note [CUDA streams].
#include <strata/cuda/runtime.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include <strata/tensor/errors.h>

namespace strata::cuda::detail {

// Note [CUDA streams]
// Stream id 0 is a device's default (legacy, null) stream, which orders itself with every
// blocking stream, as in PyTorch. Stream::create hands out the streams of a per-device pool
// of kPoolSize non-blocking streams, round robin, created on first use and never destroyed
// (PyTorch does the same): a stream is then a (device, id) value that outlives nothing, and
// looking a native stream up is one atomic load. The current stream of each device is a
// per-thread id, like the current device (which the runtime itself keeps per thread).
namespace {
constexpr int kPoolSize = 32;

struct DevicePool {
  std::once_flag created;
  std::array<cudaStream_t, kPoolSize> streams{};
  std::atomic<uint32_t> next{0};
};
std::array<DevicePool, kMaxDevices> pools;

thread_local std::array<int64_t, kMaxDevices> current_stream_ids{};

void check_device_index(int device, std::string_view op) {
  STRATA_CHECK_INDEX(device >= 0 && device < kMaxDevices, "[", op, "] device index ", device,
                     " is out of range for the CUDA backend (at most ", kMaxDevices, " devices)");
}

DevicePool& created_pool(int device) {
  DevicePool& pool = pools[static_cast<size_t>(device)];
  std::call_once(pool.created, [&] {
    DeviceScope scope(device);
    for (cudaStream_t& stream : pool.streams)
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cuda.Stream.create");
  });
  return pool;
}
}  // namespace

void throw_cuda_error(cudaError_t status, std::string_view op) {
  (void)cudaGetLastError();  // clears a non-sticky error so the next call starts clean
  strata::detail::throw_error<Error>("[", op, "] CUDA error ", cudaGetErrorName(status), ": ", cudaGetErrorString(status));
}

int64_t create_pool_stream(int device) {
  check_device_index(device, "cuda.Stream.create");
  DevicePool& pool = created_pool(device);
  return 1 + static_cast<int64_t>(pool.next.fetch_add(1, std::memory_order_relaxed) % kPoolSize);
}

cudaStream_t native_stream(int device, int64_t stream_id) {
  check_device_index(device, "cuda.stream");
  if (stream_id == 0) return nullptr;
  STRATA_CHECK_VALUE(stream_id > 0 && stream_id <= kPoolSize, "[cuda.stream] no stream with id ", stream_id,
                     " on cuda:", device);
  return created_pool(device).streams[static_cast<size_t>(stream_id - 1)];
}

int64_t current_stream_id(int device) {
  check_device_index(device, "cuda.current_stream");
  return current_stream_ids[static_cast<size_t>(device)];
}

int64_t exchange_current_stream_id(int device, int64_t stream_id) {
  check_device_index(device, "cuda.StreamGuard");
  int64_t& current = current_stream_ids[static_cast<size_t>(device)];
  const int64_t previous = current;
  current = stream_id;
  return previous;
}

cudaStream_t current_native_stream(int device) { return native_stream(device, current_stream_id(device)); }

// The default stream (id 0) is the legacy stream, which cannot capture.
void check_not_capturing_random(int device, std::string_view op) {
  const int64_t stream_id = current_stream_id(device);
  if (stream_id == 0) return;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(native_stream(device, stream_id), &status), op);
  if (status == cudaStreamCaptureStatusNone) return;
  strata::detail::throw_error<strata::Error>(
      "[", op, "] draws random numbers, which a CUDA graph would fix at capture and repeat on every replay; "
      "run it outside the captured function (for dropout: capture the model in eval mode)");
}

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cuda.current_device");
  return device;
}

DeviceScope::DeviceScope(int device) : previous_(current_device()), device_(device) {
  if (device_ != previous_) check_cuda(cudaSetDevice(device_), "cuda.set_device");
}

DeviceScope::~DeviceScope() {
  if (device_ != previous_) (void)cudaSetDevice(previous_);
}

}  // namespace strata::cuda::detail
