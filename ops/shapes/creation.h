#pragma once
// Shape functions of the creation family (ops/creation.cpp): empty, empty_strided, zeros, ones,
// full, arange, linspace, eye, rand, randn, randint. See Note [Structured ops] in
// ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <cmath>
#include <limits>
#include <optional>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// Note [Factory devices]
// A factory has no tensor argument: the dispatcher picks the backend from `device` (CPU when
// it is absent), so the result's device is `device`, or the CPU. (The hand-written Meta
// kernels used to default to meta, which mattered only under a thread-local include of Meta
// with no device argument; the derived ones now follow the same rule as every backend.)
inline Device factory_device(std::optional<Device> device) { return device.value_or(Device(kCPU)); }

// pin_memory=True (factories, _to_copy): the result is a CPU tensor in the CUDA backend's
// page-locked memory, as Tensor::pin_memory() makes. Checked before anything is allocated.
inline void pin_if_asked(TensorMeta& meta, std::optional<bool> pin_memory, const char* op) {
  if (!pin_memory.value_or(false)) return;
  STRATA_CHECK_VALUE(meta.device.is_cpu(), "[", op, "] only CPU tensors can be pinned, not ", meta.device,
                     " ones (pin_memory=True)");
  detail::check_device_in_range(detail::require_device_hooks(kCUDA, op), Device(kCUDA), op);
  meta.pinned = true;
}

// Note [Factory arguments]
// Every factory takes ATen's `Layout? layout=None` and `bool? pin_memory=None` (so a kernel
// written against ATen's signature registers unchanged): only kStrided is made, and
// pin_memory=True pins a CPU result (pin_if_asked).
inline TensorMeta factory_meta(const char* op, IntArrayRef sizes, ScalarType dtype, std::optional<Layout> layout,
                               std::optional<Device> device, std::optional<bool> pin_memory, IntArrayRef strides = {}) {
  detail::check_strided(layout.value_or(kStrided), op);
  TensorMeta meta(sizes, dtype, factory_device(device), strides);
  pin_if_asked(meta, pin_memory, op);
  return meta;
}

inline ScalarType creation_dtype(const char* op, IntArrayRef sizes, std::optional<ScalarType> dtype,
                                 ScalarType fallback) {
  (void)checked_numel(sizes, op);  // throws ValueError on a negative size
  return dtype.value_or(fallback);
}

inline ScalarType random_dtype(const char* op, IntArrayRef sizes, std::optional<ScalarType> dtype) {
  const ScalarType result = creation_dtype(op, sizes, dtype, get_default_dtype());
  STRATA_CHECK_TYPE(is_floating_point(result), "[", op, "] expected a floating point dtype, got ", result);
  return result;
}

// empty lays its result out in memory_format (Contiguous when unset; ChannelsLast needs 4 dims).
inline TensorMeta empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                        std::optional<Device> device, std::optional<bool> pin_memory,
                        std::optional<MemoryFormat> memory_format) {
  const ScalarType result = creation_dtype("empty", size, dtype, get_default_dtype());
  const MemoryFormat format = memory_format.value_or(MemoryFormat::Contiguous);
  detail::check_memory_format(format, static_cast<int64_t>(size.size()), "empty");
  if (format == MemoryFormat::Contiguous) return factory_meta("empty", size, result, layout, device, pin_memory);
  return factory_meta("empty", size, result, layout, device, pin_memory, detail::strides_for(size, format));
}
// empty_strided: strides as given, one per size, non-negative (elements may share locations).
inline TensorMeta empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                                std::optional<Layout> layout, std::optional<Device> device,
                                std::optional<bool> pin_memory) {
  const ScalarType result = creation_dtype("empty_strided", size, dtype, get_default_dtype());
  STRATA_CHECK_VALUE(stride.size() == size.size(), "[empty_strided] got ", stride.size(), " strides for ", size.size(),
                     " sizes");
  for (size_t d = 0; d < stride.size(); ++d)
    STRATA_CHECK_VALUE(stride[d] >= 0, "[empty_strided] strides must be non-negative, got ", stride);
  // The storage spans the furthest element: its bytes must be countable.
  bool any_empty = false;
  for (int64_t n : size) any_empty = any_empty || n == 0;
  int64_t span = 1, reach = 0;
  for (size_t d = 0; d < size.size() && !any_empty; ++d)
    STRATA_CHECK_VALUE(
        !__builtin_mul_overflow(size[d] - 1, stride[d], &reach) && !__builtin_add_overflow(span, reach, &span) &&
            span <= std::numeric_limits<int64_t>::max() / element_size(result),
        "[empty_strided] sizes ", size, " with strides ", stride, " need more bytes than int64 can count");
  return factory_meta("empty_strided", size, result, layout, device, pin_memory, stride);
}
inline TensorMeta zeros(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                        std::optional<Device> device, std::optional<bool> pin_memory) {
  return factory_meta("zeros", size, creation_dtype("zeros", size, dtype, get_default_dtype()), layout, device,
                      pin_memory);
}
inline TensorMeta ones(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                       std::optional<Device> device, std::optional<bool> pin_memory) {
  return factory_meta("ones", size, creation_dtype("ones", size, dtype, get_default_dtype()), layout, device,
                      pin_memory);
}
inline TensorMeta full(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype,
                       std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  const ScalarType result = creation_dtype("full", size, dtype, fill_value.default_dtype());
  detail::check_scalar_converts("full", fill_value, result);
  return factory_meta("full", size, result, layout, device, pin_memory);
}
inline TensorMeta rand(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                       std::optional<Device> device, std::optional<bool> pin_memory) {
  return factory_meta("rand", size, random_dtype("rand", size, dtype), layout, device, pin_memory);
}
inline TensorMeta randn(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                        std::optional<Device> device, std::optional<bool> pin_memory) {
  return factory_meta("randn", size, random_dtype("randn", size, dtype), layout, device, pin_memory);
}

// Note [arange length]
// length = ceil((end - start) / step), in exact 128-bit integer arithmetic when all three are
// integers (so large integer ranges neither round nor overflow: arange(INT64_MIN, INT64_MAX,
// INT64_MAX) has 3 elements) and in double otherwise. Like PyTorch, the dtype is int64 when all
// three are integers and float32 otherwise. A length int64 cannot count is an error.
inline bool arange_is_integral(const Scalar& start, const Scalar& end, const Scalar& step) {
  return start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
}

inline __int128 exact_integer(const Scalar& value) {
  return value.is_uint64() ? static_cast<__int128>(value.to<uint64_t>()) : static_cast<__int128>(value.to_long());
}

inline int64_t integral_arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  const __int128 span = exact_integer(end) - exact_integer(start), stride = exact_integer(step);
  const __int128 length = span / stride + (span % stride != 0 ? 1 : 0);
  STRATA_CHECK_VALUE(length <= std::numeric_limits<int64_t>::max(), "[arange] the range ", start, " to ", end,
                     " with step ", step, " has too many elements (more than int64 can count): the result is too large");
  return static_cast<int64_t>(length);
}

inline TensorMeta arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                                    std::optional<ScalarType> dtype, std::optional<Layout> layout,
                                    std::optional<Device> device, std::optional<bool> pin_memory) {
  const bool integral = arange_is_integral(start, end, step);
  const double first = start.to_double(), last = end.to_double(), increment = step.to_double();
  STRATA_CHECK_VALUE(std::isfinite(first) && std::isfinite(last), "[arange] unsupported range: ", start, " to ", end);
  STRATA_CHECK_VALUE(increment != 0, "[arange] step must be nonzero");
  STRATA_CHECK_VALUE((increment > 0 && last >= first) || (increment < 0 && last <= first), "[arange] step ", step,
                     " has the wrong sign for the range ", start, " to ", end);
  int64_t length = 0;
  if (integral) {
    length = integral_arange_length(start, end, step);
  } else {
    const double size = std::ceil((last - first) / increment);
    STRATA_CHECK_VALUE(size < 9.2e18, "[arange] the range ", start, " to ", end, " with step ", step,
                       " has too many elements");
    length = static_cast<int64_t>(size);
  }
  return factory_meta("arange", IntArrayRef(&length, 1), dtype.value_or(integral ? kInt64 : get_default_dtype()),
                      layout, device, pin_memory);
}

// Note [linspace values] is in ops/creation.cpp; float32 (the default dtype) unless a dtype is given.
inline TensorMeta linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<ScalarType> dtype,
                           std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  (void)start, (void)end;
  STRATA_CHECK_VALUE(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  const ScalarType result = dtype.value_or(get_default_dtype());
  STRATA_CHECK_TYPE(result != kBool, "[linspace] dtype Bool is not supported");
  STRATA_CHECK_VALUE(steps <= std::numeric_limits<int64_t>::max() / element_size(result), "[linspace] ", steps,
                     " steps of ", result, " need more bytes than int64 can count");
  return factory_meta("linspace", IntArrayRef(&steps, 1), result, layout, device, pin_memory);
}

// eye(n, m): an [n, m] matrix, float32 (the default dtype) unless a dtype is given.
inline TensorMeta eye_m(int64_t n, int64_t m, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                        std::optional<Device> device, std::optional<bool> pin_memory) {
  STRATA_CHECK_VALUE(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got n=", n, " and m=", m);
  const ScalarType result = dtype.value_or(get_default_dtype());
  int64_t nbytes = 0;
  STRATA_CHECK_VALUE(!__builtin_mul_overflow(n, m, &nbytes) && !__builtin_mul_overflow(nbytes, element_size(result), &nbytes),
                     "[eye] an [", n, ", ", m, "] matrix of ", result, " needs more bytes than int64 can count");
  const int64_t sizes[] = {n, m};
  return factory_meta("eye", IntArrayRef(sizes, 2), result, layout, device, pin_memory);
}

// Note [randint] is in ops/creation.cpp: int64 unless a dtype is given; both bounds must fit it.
inline TensorMeta randint_low(int64_t low, int64_t high, IntArrayRef size, std::optional<ScalarType> dtype,
                              std::optional<Layout> layout, std::optional<Device> device,
                              std::optional<bool> pin_memory) {
  const ScalarType result = creation_dtype("randint", size, dtype, kInt64);
  STRATA_CHECK_VALUE(low < high, "[randint] low must be less than high, got low=", low, " and high=", high);
  detail::check_scalar_converts("randint", low, result);
  detail::check_scalar_converts("randint", high - 1, result);
  return factory_meta("randint", size, result, layout, device, pin_memory);
}

}  // namespace strata::shapes
