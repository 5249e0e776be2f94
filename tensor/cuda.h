#pragma once
// The cuda:: queries and controls of the public API. Each asks the CUDA backend's DeviceHooks;
// without a loaded backend is_available() is false, device_count() 0, synchronize() a no-op,
// and the rest throw Error "[cuda] no CUDA backend is loaded ...".
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/event.h>
#include <strata/tensor/stream.h>

namespace strata::cuda {

bool is_available();  // a backend is loaded and sees at least one device
int device_count();
// Waits for all work on `device` (-1: the current device); a no-op without a backend.
void synchronize(int device = -1);

int current_device();
void set_device(int device);

// A CUDA stream; a thin wrapper over strata::Stream.
class Stream : public strata::Stream {
 public:
  // Throws ValueError for a stream that is not on a CUDA device.
  explicit Stream(const strata::Stream& stream);
  // A new stream on `device` (-1: the current device).
  static Stream create(int device = -1);
};
Stream default_stream(int device = -1);
Stream current_stream(int device = -1);

using StreamGuard = strata::StreamGuard;
using Event = strata::Event;  // Event() is a CUDA event

// Note [TF32 in matmul]
// Ampere and later GPUs can multiply float32 matrices in TF32 (10-bit mantissa inputs, float
// accumulation): several times faster, about 1e-3 relative error. As in PyTorch
// (torch.backends.cuda.matmul.allow_tf32), it is off by default, so float32 products stay
// within float32 rounding of the CPU's; set_allow_tf32(true) lets float32 GEMMs (matmul, mm,
// bmm, linear, conv2d) use it. Process-wide, read at each call; works without a backend.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Returns the cached, unused memory of every device to the driver.
void empty_cache();
// The allocator's counters of `device` (-1: the current device).
MemoryStats memory_stats(int device = -1);

}  // namespace strata::cuda
