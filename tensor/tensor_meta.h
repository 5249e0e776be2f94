#pragma once
// TensorMeta: what an op's shape function says about one of its outputs (sizes, dtype,
// device, and strides where the op defines them), before any memory exists. The framework
// allocates outputs from it (see Note [Structured ops] in ops/structured.h), so the CPU, CUDA
// and Meta kernels of an op agree by construction. Compiles under nvcc.
#include <strata/tensor/tensor.h>

namespace strata {

struct TensorMeta {
  DimVector sizes;
  ScalarType dtype = kFloat32;
  Device device = kCPU;
  DimVector strides;  // empty: contiguous
  bool pinned = false;  // a CPU tensor in page-locked memory (pin_memory=True)

  TensorMeta() = default;
  TensorMeta(IntArrayRef sizes_, ScalarType dtype_, Device device_, IntArrayRef strides_ = {})
      : sizes(sizes_), dtype(dtype_), device(device_), strides(strides_) {}
};

namespace detail {
// A new tensor (fresh storage, no dispatch) with the geometry `meta` describes.
Tensor empty_from_meta(const TensorMeta& meta);
// A contiguous CPU tensor in the CUDA backend's page-locked host memory. Throws Error naming
// `op` without a CUDA backend or a device.
Tensor empty_pinned(IntArrayRef sizes, ScalarType dtype, const char* op);
}  // namespace detail

}  // namespace strata
