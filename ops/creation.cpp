// Creation ops: empty, zeros, ones, full, arange, linspace, eye, rand, randn, randint; the
// *_like helpers and tensor() (which copies values, so it is a plain function, not an op).
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

namespace strata {
namespace {

// Autograd does not exist yet: a request for it must not be dropped silently.
// requires_grad in the options makes the new tensor a leaf that requires grad.
Tensor with_grad(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

// ---------------------------------------------------------------------------------------
// Shape and dtype functions.

ScalarType creation_dtype(const char* op, IntArrayRef sizes, std::optional<ScalarType> dtype, ScalarType fallback) {
  (void)checked_numel(sizes, op);  // throws ValueError on a negative size
  return dtype.value_or(fallback);
}

ScalarType full_dtype(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype) {
  const ScalarType result = creation_dtype("full", sizes, dtype, value.default_dtype());
  visit_dtype(result, [&]<class T>() { (void)detail::checked_scalar<T>(value, "full"); });
  return result;
}

ScalarType random_dtype(const char* op, IntArrayRef sizes, std::optional<ScalarType> dtype) {
  const ScalarType result = creation_dtype(op, sizes, dtype, get_default_dtype());
  STRATA_CHECK_TYPE(is_floating_point(result), "[", op, "] expected a floating point dtype, got ", result);
  return result;
}

struct ArangeShape {
  int64_t length;
  ScalarType dtype;
  bool integral;  // start, end and step are all integers: exact int64 arithmetic
};

// Note [arange length]
// length = ceil((end - start) / step), in exact 128-bit integer arithmetic when all three are
// integers (so large integer ranges neither round nor overflow: arange(INT64_MIN, INT64_MAX,
// INT64_MAX) has 3 elements) and in double otherwise. Like PyTorch, the dtype is int64 when all
// three are integers and float32 otherwise. A length int64 cannot count is an error.
__int128 exact_integer(const Scalar& value) {
  return value.is_uint64() ? static_cast<__int128>(value.to<uint64_t>()) : static_cast<__int128>(value.to_long());
}

int64_t integral_arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  const __int128 span = exact_integer(end) - exact_integer(start), stride = exact_integer(step);
  const __int128 length = span / stride + (span % stride != 0 ? 1 : 0);
  STRATA_CHECK_VALUE(length <= std::numeric_limits<int64_t>::max(), "[arange] the range ", start, " to ", end,
                     " with step ", step, " has too many elements (more than int64 can count): the result is too large");
  return static_cast<int64_t>(length);
}

ArangeShape arange_shape(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype) {
  const bool integral = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
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
  return {length, dtype.value_or(integral ? kInt64 : get_default_dtype()), integral};
}

// ---------------------------------------------------------------------------------------
// Kernels.

Device cpu_device(std::optional<Device> device) { return device.value_or(Device(kCPU)); }
// Meta kernels run when the device argument names meta (or a thread-local key adds Meta).
Device meta_device(std::optional<Device> device) { return device.value_or(Device(kMeta)); }

Tensor empty_cpu(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, creation_dtype("empty", sizes, dtype, get_default_dtype()), cpu_device(device));
}
Tensor empty_meta(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, creation_dtype("empty", sizes, dtype, get_default_dtype()), meta_device(device));
}

// All-zero bytes are zero in every dtype.
Tensor zeros_cpu(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, creation_dtype("zeros", sizes, dtype, get_default_dtype()), cpu_device(device));
  char* data = static_cast<char*>(out.impl()->data());
  const int64_t item = out.element_size();
  detail::run_chunked(out.numel(), [data, item](int64_t begin, int64_t end) {
    std::memset(data + begin * item, 0, static_cast<size_t>((end - begin) * item));
  });
  return out;
}
Tensor zeros_meta(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, creation_dtype("zeros", sizes, dtype, get_default_dtype()), meta_device(device));
}

Tensor ones_cpu(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, creation_dtype("ones", sizes, dtype, get_default_dtype()), cpu_device(device));
  detail::fill_kernel(out, 1, "ones");
  return out;
}
Tensor ones_meta(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, creation_dtype("ones", sizes, dtype, get_default_dtype()), meta_device(device));
}

Tensor full_cpu(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, full_dtype(sizes, value, dtype), cpu_device(device));
  detail::fill_kernel(out, value, "full");
  return out;
}
Tensor full_meta(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, full_dtype(sizes, value, dtype), meta_device(device));
}

Tensor arange_start_step_cpu(const Scalar& start, const Scalar& end, const Scalar& step,
                             std::optional<ScalarType> dtype, std::optional<Device> device) {
  const ArangeShape shape = arange_shape(start, end, step, dtype);
  const int64_t length = shape.length;
  Tensor out = detail::make_empty(IntArrayRef(&length, 1), shape.dtype, cpu_device(device));
  visit_dtype(shape.dtype, [&]<class T>() {
    T* data = detail::data_of<T>(out);
    if (shape.integral) {
      // Every element lies in [start, end), so 128-bit arithmetic is exact and never overflows.
      const __int128 first = exact_integer(start), stride = exact_integer(step);
      detail::run_chunked(length, [=](int64_t begin, int64_t stop) {
        for (int64_t i = begin; i < stop; ++i) {
          data[i] = detail::convert<T>(static_cast<int64_t>(first + i * stride));
        }
      });
    } else {
      const double first = start.to_double(), stride = step.to_double();
      detail::run_chunked(length, [=](int64_t begin, int64_t stop) {
        for (int64_t i = begin; i < stop; ++i) data[i] = detail::convert<T>(first + static_cast<double>(i) * stride);
      });
    }
  });
  return out;
}
Tensor arange_start_step_meta(const Scalar& start, const Scalar& end, const Scalar& step,
                              std::optional<ScalarType> dtype, std::optional<Device> device) {
  const ArangeShape shape = arange_shape(start, end, step, dtype);
  return detail::make_empty(IntArrayRef(&shape.length, 1), shape.dtype, meta_device(device));
}
Tensor arange_cpu(const Scalar& end, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return arange_start_step_cpu(0, end, 1, dtype, device);
}
Tensor arange_meta(const Scalar& end, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return arange_start_step_meta(0, end, 1, dtype, device);
}

// Note [Random numbers]
// rand and randn lock the default generator once per tensor and draw every number in order
// on the calling thread, so a tensor depends only on the seed and the sequence of calls.
// rand takes the top `digits` bits of a 64-bit draw (digits = the dtype's mantissa width),
// which gives values exactly representable in the dtype, uniform in [0, 1), never 1.
// randn uses Box-Muller in double on pairs of draws.
template <class T>
constexpr int mantissa_digits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}

Tensor rand_cpu(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, random_dtype("rand", sizes, dtype), cpu_device(device));
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>)) {
      constexpr int digits = mantissa_digits<T>();
      const double scale = std::ldexp(1.0, -digits);
      T* data = detail::data_of<T>(out);
      auto& generator = detail::cpu_generator(default_generator(out.device()));
      std::lock_guard lock(generator.mutex);
      for (int64_t i = 0, n = out.numel(); i < n; ++i)
        data[i] = static_cast<T>(static_cast<double>(generator.engine() >> (64 - digits)) * scale);
    }
  });
  return out;
}

Tensor randn_cpu(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, random_dtype("randn", sizes, dtype), cpu_device(device));
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>)) {
      T* data = detail::data_of<T>(out);
      const int64_t n = out.numel();
      auto& generator = detail::cpu_generator(default_generator(out.device()));
      std::lock_guard lock(generator.mutex);
      auto uniform = [&generator] { return static_cast<double>(generator.engine() >> 11) * 0x1.0p-53; };
      for (int64_t i = 0; i < n; i += 2) {
        const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
        const double angle = 2.0 * std::numbers::pi * uniform();
        data[i] = static_cast<T>(radius * std::cos(angle));
        if (i + 1 < n) data[i + 1] = static_cast<T>(radius * std::sin(angle));
      }
    }
  });
  return out;
}

Tensor rand_meta(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, random_dtype("rand", sizes, dtype), meta_device(device));
}
Tensor randn_meta(IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty(sizes, random_dtype("randn", sizes, dtype), meta_device(device));
}

// ---------------------------------------------------------------------------------------
// linspace, eye and randint.

// Note [linspace values]
// steps values from start to end inclusive, float32 unless a dtype is given. Like PyTorch,
// the first half counts up from start and the second half down from end, so both endpoints
// are exact; values are computed in double and converted (truncated for integer dtypes).
ScalarType linspace_dtype(int64_t steps, std::optional<ScalarType> dtype) {
  STRATA_CHECK_VALUE(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  const ScalarType result = dtype.value_or(get_default_dtype());
  STRATA_CHECK_TYPE(result != kBool, "[linspace] dtype Bool is not supported");
  STRATA_CHECK_VALUE(steps <= std::numeric_limits<int64_t>::max() / element_size(result), "[linspace] ", steps,
                     " steps of ", result, " need more bytes than int64 can count");
  return result;
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps, std::optional<ScalarType> dtype,
                    std::optional<Device> device) {
  Tensor out = detail::make_empty({steps}, linspace_dtype(steps, dtype), cpu_device(device));
  const double first = start.to_double(), last = end.to_double();
  const double step = steps > 1 ? (last - first) / static_cast<double>(steps - 1) : 0.0;
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    const int64_t half = steps == 1 ? 1 : steps / 2;  // a single step is start
    detail::run_chunked(steps, [=](int64_t begin, int64_t stop) {
      for (int64_t i = begin; i < stop; ++i) {
        const double value = i < half ? first + step * static_cast<double>(i)
                                      : last - step * static_cast<double>(steps - 1 - i);
        data[i] = detail::convert<T>(value);
      }
    });
  });
  return out;
}

Tensor linspace_meta(const Scalar&, const Scalar&, int64_t steps, std::optional<ScalarType> dtype,
                     std::optional<Device> device) {
  return detail::make_empty({steps}, linspace_dtype(steps, dtype), meta_device(device));
}

// eye(n, m): ones on the main diagonal of an [n, m] matrix, every dtype (float32 by default).
ScalarType eye_dtype(int64_t n, int64_t m, std::optional<ScalarType> dtype) {
  STRATA_CHECK_VALUE(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got n=", n, " and m=", m);
  const ScalarType result = dtype.value_or(get_default_dtype());
  int64_t nbytes = 0;
  STRATA_CHECK_VALUE(!__builtin_mul_overflow(n, m, &nbytes) && !__builtin_mul_overflow(nbytes, element_size(result), &nbytes),
                     "[eye] an [", n, ", ", m, "] matrix of ", result, " needs more bytes than int64 can count");
  return result;
}

Tensor eye_m_cpu(int64_t n, int64_t m, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out = zeros_cpu({n, m}, eye_dtype(n, m, dtype), device);
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    for (int64_t i = 0, diagonal = std::min(n, m); i < diagonal; ++i) data[i * m + i] = detail::convert<T>(1);
  });
  return out;
}
Tensor eye_m_meta(int64_t n, int64_t m, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return detail::make_empty({n, m}, eye_dtype(n, m, dtype), meta_device(device));
}
Tensor eye_cpu(int64_t n, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return eye_m_cpu(n, n, dtype, device);
}
Tensor eye_meta(int64_t n, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return eye_m_meta(n, n, dtype, device);
}

// Note [randint]
// Integers uniform in [low, high), int64 unless a dtype is given; both bounds must fit the
// dtype. Each value is low + (64-bit draw mod (high - low)): the modulo bias is at most
// (high - low) / 2^64. Drawn in order under the generator's lock (Note [Random numbers]).
ScalarType randint_dtype(int64_t low, int64_t high, IntArrayRef sizes, std::optional<ScalarType> dtype) {
  const ScalarType result = creation_dtype("randint", sizes, dtype, kInt64);
  STRATA_CHECK_VALUE(low < high, "[randint] low must be less than high, got low=", low, " and high=", high);
  visit_dtype(result, [&]<class T>() {
    (void)detail::checked_scalar<T>(low, "randint");
    (void)detail::checked_scalar<T>(high - 1, "randint");
  });
  return result;
}

Tensor randint_low_cpu(int64_t low, int64_t high, IntArrayRef sizes, std::optional<ScalarType> dtype,
                       std::optional<Device> device) {
  Tensor out = detail::make_empty(sizes, randint_dtype(low, high, sizes, dtype), cpu_device(device));
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    auto& generator = detail::cpu_generator(default_generator(out.device()));
    std::lock_guard lock(generator.mutex);
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      data[i] = detail::convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + generator.engine() % range));
  });
  return out;
}
Tensor randint_low_meta(int64_t low, int64_t high, IntArrayRef sizes, std::optional<ScalarType> dtype,
                        std::optional<Device> device) {
  return detail::make_empty(sizes, randint_dtype(low, high, sizes, dtype), meta_device(device));
}
Tensor randint_cpu(int64_t high, IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return randint_low_cpu(0, high, sizes, dtype, device);
}
Tensor randint_meta(int64_t high, IntArrayRef sizes, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return randint_low_meta(0, high, sizes, dtype, device);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("arange(Scalar end, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
        "Device? device=None) -> Tensor");
  m.def("rand(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("randn(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("eye(int n, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("eye.m(int n, int m, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("randint(int high, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("randint.low(int low, int high, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("empty", &empty_cpu);
  m.impl("zeros", &zeros_cpu);
  m.impl("ones", &ones_cpu);
  m.impl("full", &full_cpu);
  m.impl("arange", &arange_cpu);
  m.impl("arange.start_step", &arange_start_step_cpu);
  m.impl("rand", &rand_cpu);
  m.impl("randn", &randn_cpu);
  m.impl("linspace", &linspace_cpu);
  m.impl("eye", &eye_cpu);
  m.impl("eye.m", &eye_m_cpu);
  m.impl("randint", &randint_cpu);
  m.impl("randint.low", &randint_low_cpu);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("empty", &empty_meta);
  m.impl("zeros", &zeros_meta);
  m.impl("ones", &ones_meta);
  m.impl("full", &full_meta);
  m.impl("arange", &arange_meta);
  m.impl("arange.start_step", &arange_start_step_meta);
  m.impl("rand", &rand_meta);
  m.impl("randn", &randn_meta);
  m.impl("linspace", &linspace_meta);
  m.impl("eye", &eye_meta);
  m.impl("eye.m", &eye_m_meta);
  m.impl("randint", &randint_meta);
  m.impl("randint.low", &randint_low_meta);
}

// ---------------------------------------------------------------------------------------
// Free functions.

namespace {
using SizeOptionsOp = TypedOperatorHandle<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>;

Tensor call_sized(const SizeOptionsOp& op, IntArrayRef sizes, const TensorOptions& options) {
  return with_grad(op.call(sizes, options.dtype_opt(), options.device_opt()), options);
}
}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::empty").typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return call_sized(op, sizes, options);
}
Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::zeros").typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return call_sized(op, sizes, options);
}
Tensor ones(IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::ones").typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return call_sized(op, sizes, options);
}
Tensor rand(IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::rand").typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return call_sized(op, sizes, options);
}
Tensor randn(IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::randn").typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return call_sized(op, sizes, options);
}

Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options) {
  static const auto op = find_op("strata::full")
                             .typed<Tensor(IntArrayRef, const Scalar&, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(sizes, value, options.dtype_opt(), options.device_opt()), options);
}

Tensor arange(const Scalar& end, TensorOptions options) {
  static const auto op =
      find_op("strata::arange").typed<Tensor(const Scalar&, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(end, options.dtype_opt(), options.device_opt()), options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions options) {
  static const auto op =
      find_op("strata::arange.start_step")
          .typed<Tensor(const Scalar&, const Scalar&, const Scalar&, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(start, end, step, options.dtype_opt(), options.device_opt()), options);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  static const auto op = find_op("strata::linspace")
                             .typed<Tensor(const Scalar&, const Scalar&, int64_t, std::optional<ScalarType>,
                                           std::optional<Device>)>();
  return with_grad(op.call(start, end, steps, options.dtype_opt(), options.device_opt()), options);
}

Tensor eye(int64_t n, TensorOptions options) {
  static const auto op =
      find_op("strata::eye").typed<Tensor(int64_t, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(n, options.dtype_opt(), options.device_opt()), options);
}

Tensor eye(int64_t n, int64_t m, TensorOptions options) {
  static const auto op =
      find_op("strata::eye.m").typed<Tensor(int64_t, int64_t, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(n, m, options.dtype_opt(), options.device_opt()), options);
}

Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options) {
  static const auto op = find_op("strata::randint")
                             .typed<Tensor(int64_t, IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(high, sizes, options.dtype_opt(), options.device_opt()), options);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options) {
  static const auto op =
      find_op("strata::randint.low")
          .typed<Tensor(int64_t, int64_t, IntArrayRef, std::optional<ScalarType>, std::optional<Device>)>();
  return with_grad(op.call(low, high, sizes, options.dtype_opt(), options.device_opt()), options);
}

namespace {
// The *_like functions: unset options come from the tensor.
TensorOptions like(const Tensor& t, const TensorOptions& options) {
  return options.merged_with(t.options());
}
}  // namespace

Tensor empty_like(const Tensor& t, TensorOptions options) { return empty(t.sizes(), like(t, options)); }
Tensor zeros_like(const Tensor& t, TensorOptions options) { return zeros(t.sizes(), like(t, options)); }
Tensor ones_like(const Tensor& t, TensorOptions options) { return ones(t.sizes(), like(t, options)); }
Tensor rand_like(const Tensor& t, TensorOptions options) { return rand(t.sizes(), like(t, options)); }
Tensor randn_like(const Tensor& t, TensorOptions options) { return randn(t.sizes(), like(t, options)); }
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options) {
  return full(t.sizes(), value, like(t, options));
}

namespace detail {

Tensor tensor_from_data(const void* data, ScalarType data_dtype, int64_t count, IntArrayRef sizes,
                        ScalarType default_dtype, const TensorOptions& options) {
  const int64_t numel = checked_numel(sizes, "tensor");
  STRATA_CHECK_VALUE(numel == count, "[tensor] got ", count, " values for shape ", sizes, " (", numel, " elements)");
  const ScalarType dtype = options.dtype_opt().value_or(default_dtype);
  Tensor out = make_empty(sizes, dtype, Device(kCPU));
  if (count > 0) {
    Tensor source = from_blob(const_cast<void*>(data), sizes, TensorOptions(data_dtype));
    copy_kernel(out, source);
  }
  const Device device = options.device();
  return with_grad(device == out.device() ? out : out.to(device), options);
}

}  // namespace detail
}  // namespace strata

namespace strata::detail {
void check_nested_size(int64_t depth, int64_t expected, int64_t actual) {
  STRATA_CHECK_VALUE(actual == expected, "[tensor] ragged nested list: expected ", expected,
                     " elements at nesting depth ", depth, " (as in the first list there), got ", actual);
}
}  // namespace strata::detail
