#pragma once
// Internal to cuda/ (.cu files only): the device-side index check of every kernel that reads
// through indices (index_select, index_add, gather, scatter_add, max_pool2d's backward,
// embedding, nll_loss). See Note [CUDA index checks].
#include <cstdint>
#include <cstdio>

// The device's assertion failure (declared by glibc's assert.h only without NDEBUG; the CUDA
// runtime defines it for device code either way).
extern "C" __host__ __device__ void __assert_fail(const char* assertion, const char* file, unsigned int line,
                                                  const char* function) noexcept;

namespace strata::cuda::detail {

// Note [CUDA index checks]
// The CPU kernels check every index value and throw IndexError "[op] index v is out of bounds
// for dimension d with size s". On CUDA the values live on the device: checking them on the
// host would mean a reduction and a host synchronization in every call (index_select under
// an embedding, gather under a loss: hot paths). So, as PyTorch does, each kernel checks the
// indices it reads on the device: a bad one prints the CPU's message (with the op, value,
// dimension and size) and fails a device-side assertion before any memory is touched. The
// host sees cudaErrorAssert ("device-side assert triggered") at its next synchronizing CUDA
// call; as with any CUDA assertion, the process's CUDA context is unusable afterwards. A
// wrong index is a bug in the calling program, not a condition to recover from.
__device__ __forceinline__ void check_index(const char* op, int64_t value, int64_t dim, int64_t size) {
  if (value < 0 || value >= size) [[unlikely]] {
    printf("[%s] index %lld is out of bounds for dimension %lld with size %lld\n", op, static_cast<long long>(value),
           static_cast<long long>(dim), static_cast<long long>(size));
    __assert_fail("index out of bounds", __FILE__, __LINE__, op);
  }
}

}  // namespace strata::cuda::detail
