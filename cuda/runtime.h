#pragma once
// Internal to cuda/: the CUDA runtime as the backend uses it. Not installed; includes CUDA headers.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

namespace strata::cuda::detail {

// Throws strata::Error "[op] CUDA error cudaErrorX: what the runtime says" for a failed call,
// after clearing the runtime's last error so the next call does not see it again.
[[noreturn]] void throw_cuda_error(cudaError_t status, std::string_view op);

inline void check_cuda(cudaError_t status, std::string_view op) {
  if (status != cudaSuccess) [[unlikely]]
    throw_cuda_error(status, op);
}

// The most devices the backend serves (per-device tables are arrays of this size).
inline constexpr int kMaxDevices = 64;

// The native stream behind a strata stream id on `device` (0: the default stream).
cudaStream_t native_stream(int device, int64_t stream_id);
// The calling thread's current stream on `device`, and its id.
int64_t current_stream_id(int device);
cudaStream_t current_native_stream(int device);
// The calling thread's current device.
int current_device();
// Throws for an op that draws random numbers while the current stream of `device` is capturing
// a CUDA graph: the numbers would be fixed at capture, so every replay would repeat them.
void check_not_capturing_random(int device, std::string_view op);

// Makes `device` current for a scope and restores the previous one (no call when they agree).
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_;
  int device_;
};

}  // namespace strata::cuda::detail

namespace strata::cuda::detail {
// A stream of `device`'s pool (Note [CUDA streams]); returns its id.
int64_t create_pool_stream(int device);
// Makes `stream_id` the calling thread's current stream on `device`; returns the previous id.
int64_t exchange_current_stream_id(int device, int64_t stream_id);
}  // namespace strata::cuda::detail
