// Creation ops: empty, zeros, ones, full, arange, linspace, eye, rand, randn, randint; the
// *_like helpers and tensor() (which copies values, so it is a plain function, not an op).
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/shapes/creation.h>
#include <strata/ops/structured.h>

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

// The typed handle of a factory whose schema arguments are `Leading...` then ATen's keyword
// arguments (Note [Factory arguments]).
template <class... Leading>
auto factory_op(const char* name) {
  return find_op(name)
      .template typed<Tensor(Leading..., std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>,
                             std::optional<bool>)>();
}

// ---------------------------------------------------------------------------------------
// CPU compute (Note [Structured ops]): each fills the fresh contiguous tensor the shape
// function in shapes/creation.h describes.

using shapes::exact_integer;

// All-zero bytes are zero in every dtype.
void zeros_out_cpu(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                   std::optional<Device>, std::optional<bool>) {
  char* data = static_cast<char*>(out.impl()->data());
  const int64_t item = out.element_size();
  detail::run_chunked(out.numel(), [data, item](int64_t begin, int64_t end) {
    std::memset(data + begin * item, 0, static_cast<size_t>((end - begin) * item));
  });
}

void ones_out_cpu(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                  std::optional<Device>, std::optional<bool>) {
  detail::fill_kernel(out, 1, "ones");
}

void full_out_cpu(const Tensor& out, IntArrayRef, const Scalar& value, std::optional<ScalarType>, std::optional<Layout>,
                  std::optional<Device>, std::optional<bool>) {
  detail::fill_kernel(out, value, "full");
}

void arange_start_step_out_cpu(const Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step,
                               std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>,
                               std::optional<bool>) {
  const int64_t length = out.numel();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    if (shapes::arange_is_integral(start, end, step)) {
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
        for (int64_t i = begin; i < stop; ++i) data[i] = detail::convert<T>(std::fma(static_cast<double>(i), stride, first));
      });
    }
  });
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

void rand_out_cpu(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                  std::optional<Device>, std::optional<bool>) {
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
}

void randn_out_cpu(const Tensor& out, IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                   std::optional<Device>, std::optional<bool>) {
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
}

// ---------------------------------------------------------------------------------------
// linspace, eye and randint.

// Note [linspace values]
// steps values from start to end inclusive, float32 unless a dtype is given. Like PyTorch,
// the first half counts up from start and the second half down from end, so both endpoints
// are exact; values are computed in double and converted (truncated for integer dtypes). Each
// value is one fused multiply-add, as is arange's start + i * step, so that every build (with
// or without FMA instructions) and the CUDA kernels give the same numbers.
void linspace_out_cpu(const Tensor& out, const Scalar& start, const Scalar& end, int64_t steps,
                      std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  const double first = start.to_double(), last = end.to_double();
  const double step = steps > 1 ? (last - first) / static_cast<double>(steps - 1) : 0.0;
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    const int64_t half = steps == 1 ? 1 : steps / 2;  // a single step is start
    detail::run_chunked(steps, [=](int64_t begin, int64_t stop) {
      for (int64_t i = begin; i < stop; ++i) {
        const double value = i < half ? std::fma(step, static_cast<double>(i), first)
                                      : std::fma(-step, static_cast<double>(steps - 1 - i), last);
        data[i] = detail::convert<T>(value);
      }
    });
  });
}

// eye(n, m): ones on the main diagonal of an [n, m] matrix, every dtype (float32 by default).
void eye_m_out_cpu(const Tensor& out, int64_t n, int64_t m, std::optional<ScalarType> dtype,
                   std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  zeros_out_cpu(out, {n, m}, dtype, layout, device, pin_memory);
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    for (int64_t i = 0, diagonal = std::min(n, m); i < diagonal; ++i) data[i * m + i] = detail::convert<T>(1);
  });
}

// Note [randint]
// Integers uniform in [low, high), int64 unless a dtype is given; both bounds must fit the
// dtype. Each value is low + (64-bit draw mod (high - low)): the modulo bias is at most
// (high - low) / 2^64. Drawn in order under the generator's lock (Note [Random numbers]).
void randint_low_out_cpu(const Tensor& out, int64_t low, int64_t high, IntArrayRef, std::optional<ScalarType>,
                         std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  visit_dtype(out.dtype(), [&]<class T>() {
    T* data = detail::data_of<T>(out);
    auto& generator = detail::cpu_generator(default_generator(out.device()));
    std::lock_guard lock(generator.mutex);
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      data[i] = detail::convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + generator.engine() % range));
  });
}

// ---------------------------------------------------------------------------------------
// Composites: the one-bound forms forward to the general op, so a backend writes only that.

Tensor arange_composite(const Scalar& end, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                        std::optional<Device> device, std::optional<bool> pin_memory) {
  static const auto op = factory_op<const Scalar&, const Scalar&, const Scalar&>("strata::arange.start_step");
  return op.call(0, end, 1, dtype, layout, device, pin_memory);
}
Tensor eye_composite(int64_t n, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                     std::optional<Device> device, std::optional<bool> pin_memory) {
  static const auto op = factory_op<int64_t, int64_t>("strata::eye.m");
  return op.call(n, n, dtype, layout, device, pin_memory);
}
Tensor randint_composite(int64_t high, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                         std::optional<Device> device, std::optional<bool> pin_memory) {
  static const auto op = factory_op<int64_t, int64_t, IntArrayRef>("strata::randint.low");
  return op.call(0, high, size, dtype, layout, device, pin_memory);
}

}  // namespace

// The keyword arguments are ATen's (Note [Factory arguments] in shapes/creation.h).
STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured;
  def_structured<&shapes::empty>(m,
                                 "empty.memory_format(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                                 "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) "
                                 "-> Tensor");
  def_structured<&shapes::empty_strided>(m,
                                         "empty_strided(int[] size, int[] stride, *, ScalarType? dtype=None, "
                                         "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::zeros>(m,
                                 "zeros(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                                 "Device? device=None, bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::ones>(m,
                                "ones(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                                "Device? device=None, bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::full>(m,
                                "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, "
                                "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def(
      "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor",
      &arange_composite);
  def_structured<&shapes::arange_start_step>(m,
                                             "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
                                             "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                                             "bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::rand>(m,
                                "rand(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                                "Device? device=None, bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::randn>(m,
                                 "randn(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                                 "Device? device=None, bool? pin_memory=None) -> Tensor");
  def_structured<&shapes::linspace>(m,
                                    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, "
                                    "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def(
      "eye(int n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor",
      &eye_composite);
  def_structured<&shapes::eye_m>(m,
                                 "eye.m(int n, int m, *, ScalarType? dtype=None, Layout? layout=None, "
                                 "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def(
      "randint(int high, int[] size, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor",
      &randint_composite);
  def_structured<&shapes::randint_low>(m,
                                       "randint.low(int low, int high, int[] size, *, ScalarType? dtype=long, "
                                       "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("empty.memory_format", structured<&shapes::empty, nullptr>());
  m.impl("empty_strided", structured<&shapes::empty_strided, nullptr>());
  m.impl("zeros", structured<&shapes::zeros, &zeros_out_cpu>());
  m.impl("ones", structured<&shapes::ones, &ones_out_cpu>());
  m.impl("full", structured<&shapes::full, &full_out_cpu>());
  m.impl("arange.start_step", structured<&shapes::arange_start_step, &arange_start_step_out_cpu>());
  m.impl("rand", structured<&shapes::rand, &rand_out_cpu>());
  m.impl("randn", structured<&shapes::randn, &randn_out_cpu>());
  m.impl("linspace", structured<&shapes::linspace, &linspace_out_cpu>());
  m.impl("eye.m", structured<&shapes::eye_m, &eye_m_out_cpu>());
  m.impl("randint.low", structured<&shapes::randint_low, &randint_low_out_cpu>());
}

// ---------------------------------------------------------------------------------------
// Free functions.

namespace {
// A call of a factory_op passing ATen's keyword arguments from `options`.
template <class Op, class... Args>
Tensor call_factory(const Op& op, const TensorOptions& options, const Args&... leading) {
  return with_grad(
      op.call(leading..., options.dtype_opt(), options.layout_opt(), options.device_opt(), options.pinned_memory_opt()),
      options);
}
}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  static const auto op = find_op("strata::empty.memory_format")
                             .typed<Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Layout>,
                                           std::optional<Device>, std::optional<bool>, std::optional<MemoryFormat>)>();
  STRATA_CHECK_VALUE(!(options.has_memory_format() && memory_format),
                     "[empty] memory_format is set both in the options and as an argument");
  return with_grad(op.call(sizes, options.dtype_opt(), options.layout_opt(), options.device_opt(),
                           options.pinned_memory_opt(), memory_format ? memory_format : options.memory_format_opt()),
                   options);
}
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef, IntArrayRef>("strata::empty_strided");
  return call_factory(op, options, sizes, strides);
}
Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef>("strata::zeros");
  return call_factory(op, options, sizes);
}
Tensor ones(IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef>("strata::ones");
  return call_factory(op, options, sizes);
}
Tensor rand(IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef>("strata::rand");
  return call_factory(op, options, sizes);
}
Tensor randn(IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef>("strata::randn");
  return call_factory(op, options, sizes);
}
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options) {
  static const auto op = factory_op<IntArrayRef, const Scalar&>("strata::full");
  return call_factory(op, options, sizes, value);
}
Tensor arange(const Scalar& end, TensorOptions options) {
  static const auto op = factory_op<const Scalar&>("strata::arange");
  return call_factory(op, options, end);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions options) {
  static const auto op = factory_op<const Scalar&, const Scalar&, const Scalar&>("strata::arange.start_step");
  return call_factory(op, options, start, end, step);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  static const auto op = factory_op<const Scalar&, const Scalar&, int64_t>("strata::linspace");
  return call_factory(op, options, start, end, steps);
}
Tensor eye(int64_t n, TensorOptions options) {
  static const auto op = factory_op<int64_t>("strata::eye");
  return call_factory(op, options, n);
}
Tensor eye(int64_t n, int64_t m, TensorOptions options) {
  static const auto op = factory_op<int64_t, int64_t>("strata::eye.m");
  return call_factory(op, options, n, m);
}
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<int64_t, IntArrayRef>("strata::randint");
  return call_factory(op, options, high, sizes);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options) {
  static const auto op = factory_op<int64_t, int64_t, IntArrayRef>("strata::randint.low");
  return call_factory(op, options, low, high, sizes);
}

namespace {
// Note [Strides of *_like results]
// As in LibTorch, a *_like result takes t's sizes and, by default (Preserve), t's strides when
// they are dense in some order of dims (a transposed or channels-last t), else the format t's
// strides suggest; a format given in the options or as an argument (not both) overrides that.
// Unset options come from t. Contiguous results go through the plain factory (so a traced
// graph records zeros, ones...); others are made by empty_strided and then filled.
struct LikeLayout {
  TensorOptions options;             // t's options under the given ones, without memory format or grad
  std::optional<DimVector> strides;  // unset: contiguous
};

LikeLayout like_layout(const char* op, const Tensor& t, const TensorOptions& options,
                       std::optional<MemoryFormat> memory_format) {
  STRATA_CHECK_VALUE(!(options.has_memory_format() && memory_format), "[", op,
                     "] memory_format is set both in the options and as an argument");
  const MemoryFormat format = memory_format.value_or(options.memory_format_opt().value_or(MemoryFormat::Preserve));
  if (format != MemoryFormat::Preserve) detail::check_memory_format(format, t.dim(), op);
  LikeLayout result{options.merged_with(t.options()).memory_format(MemoryFormat::Contiguous).requires_grad(false),
                    std::nullopt};
  DimVector strides = detail::strides_for_copy(t.sizes(), t.strides(), format);
  if (!detail::is_contiguous_as(t.sizes(), strides, MemoryFormat::Contiguous)) result.strides = std::move(strides);
  return result;
}

template <class Contiguous, class Fill>
Tensor make_like(const char* op, const Tensor& t, const TensorOptions& options,
                 std::optional<MemoryFormat> memory_format, const Contiguous& contiguous, const Fill& fill) {
  const LikeLayout layout = like_layout(op, t, options, memory_format);
  Tensor result;
  if (!layout.strides) {
    result = contiguous(layout.options);
  } else {
    result = empty_strided(t.sizes(), *layout.strides, layout.options);
    fill(result, layout.options);
  }
  return with_grad(result, options);
}
}  // namespace

Tensor empty_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return make_like(
      "empty_like", t, options, memory_format, [&](const TensorOptions& o) { return empty(t.sizes(), o); },
      [](const Tensor&, const TensorOptions&) {});
}
Tensor zeros_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return make_like(
      "zeros_like", t, options, memory_format, [&](const TensorOptions& o) { return zeros(t.sizes(), o); },
      [](const Tensor& out, const TensorOptions&) { zero_(out); });
}
Tensor ones_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return make_like(
      "ones_like", t, options, memory_format, [&](const TensorOptions& o) { return ones(t.sizes(), o); },
      [](const Tensor& out, const TensorOptions&) { fill_(out, 1); });
}
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options,
                 std::optional<MemoryFormat> memory_format) {
  return make_like(
      "full_like", t, options, memory_format, [&](const TensorOptions& o) { return full(t.sizes(), value, o); },
      [&](const Tensor& out, const TensorOptions& o) { copy_(out, full({}, value, o)); });
}
// Random values are drawn in the logical order of t's elements, whatever the strides, so a
// seed gives the same values in every layout.
Tensor rand_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return make_like(
      "rand_like", t, options, memory_format, [&](const TensorOptions& o) { return rand(t.sizes(), o); },
      [&](const Tensor& out, const TensorOptions& o) { copy_(out, rand(t.sizes(), o)); });
}
Tensor randn_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return make_like(
      "randn_like", t, options, memory_format, [&](const TensorOptions& o) { return randn(t.sizes(), o); },
      [&](const Tensor& out, const TensorOptions& o) { copy_(out, randn(t.sizes(), o)); });
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
