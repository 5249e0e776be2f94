#pragma once
// Zero-copy exchange with other frameworks through DLPack (https://dmlc.github.io/dlpack).
// The struct is only declared here, so users need <dlpack/dlpack.h> only to look inside it.
#include <strata/tensor/tensor.h>

struct DLManagedTensor;

namespace strata {

// A DLPack view of `tensor`'s memory, sizes, strides and dtype (no copy). The result keeps the
// tensor alive until its deleter is called; the consumer must call it exactly once. Throws for
// Meta tensors (they have no data) and undefined tensors.
DLManagedTensor* to_dlpack(const Tensor& tensor);

// A tensor over a DLPack tensor's memory (no copy), keeping its sizes, strides and dtype. On
// success strata owns `managed`: its deleter runs exactly once, when the tensor's storage dies.
// On failure (an unsupported device, dtype or layout) nothing is taken and the caller keeps it.
// Dtypes: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64; devices:
// CPU and CUDA.
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace strata
