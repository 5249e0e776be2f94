#pragma once
// The op table: one entry per public operator, each with the dtypes it supports, which of its
// inputs are differentiable, and a generator of sample inputs (PyTorch's OpInfo is the model).
// tests/ops/test_op_table.cpp runs every entry on every backend present against the CPU in
// float64, forward and backward, and Meta against the CPU; op_table_entries.h holds the entries.
//
// Note [Op table samples]
// A sample is a list of Args (its tensor inputs) and a call. Each Arg is a contiguous CPU
// `base` plus a Layout that the harness applies before the call (a transpose, a stepped slice
// or an expand of it), so that the op sees a non-contiguous input while gradients are taken
// with respect to the base and every backend gets the same geometry: the harness moves the
// bases (to float64, to Meta, to another device) and applies the layout there. The call gets
// the laid-out inputs and an Env naming the device and dtype the sample runs at (factories
// create there); it calls the op through its public free function and returns its tensors.
//
// Note [Adding to the op table]
// A new public op (a strata:: schema) fails "every public op has an entry" until it gets an
// OpEntry in op_table_entries*.h (or, for a backward helper or the kernel under a composite, a
// CoveredOp naming the entry that exercises it, in test_op_table.cpp). List exactly the dtypes
// its CPU kernel takes ("each entry supports exactly the dtypes it lists" checks; run the
// test with STRATA_OPTABLE_DISCOVER=1 to print them), the differentiable args, and samples
// that reach every branch of its shape function: 0-d, empty, broadcasting, each Layout, and
// its own arguments. A new backend joins by making its device appear in backends() in
// test_op_table.cpp (CUDA does when cuda::is_available()): every sample then runs there and
// is compared with the CPU in float64, forward and backward.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace strata::optable {

enum class Layout { Contiguous, Transposed, Sliced, Expanded };

// One tensor input: `base` is contiguous on the CPU; the op sees layout_view(base) of `sizes`.
struct Arg {
  Tensor base;
  Layout layout = Layout::Contiguous;
  std::vector<int64_t> sizes;
  bool index = false;  // indices (make_index): never cast to float64 for a reference run
  Arg as(ScalarType dtype) const { return Arg{base.to(dtype), layout, sizes, index}; }
};

// Where a sample runs: factories create on `device`, at `dtype` (the sample's dtype, or float64
// for the reference run of a floating sample).
struct Env {
  Device device;
  ScalarType dtype;
  TensorOptions options() const { return TensorOptions().dtype(dtype).device(device); }
};

using OpCall = std::function<tensor_list(const tensor_list& inputs, const Env& env)>;

struct Sample {
  std::string desc;
  std::vector<Arg> args;
  OpCall call;
  // False where the op's gradient is by design not the derivative (embedding's padding_idx and
  // scale_grad_by_freq, as in PyTorch): gradcheck skips the sample, the other checks run.
  bool true_gradient = true;
};

// How a forward result is checked against the CPU float64 reference.
enum class Values {
  Deterministic,  // values compared with tolerances by dtype (exact for integral and bool)
  Random,         // shapes and dtypes compared; `check_random` checks statistics
  Unspecified,    // shapes and dtypes only (empty)
};

struct OpEntry {
  std::string name;                  // the schema's name with its overload: "strata::add.Tensor"
  std::vector<ScalarType> dtypes;    // the dtypes it supports (each sample set is made per dtype)
  std::vector<size_t> grad_inputs;   // positions in Sample::args that are differentiable (floating ones)
  std::function<std::vector<Sample>(ScalarType)> samples;
  Values values = Values::Deterministic;
  // For Values::Random: statistics of one CPU result (inputs laid out, outputs).
  std::function<void(const tensor_list& inputs, const tensor_list& outputs)> check_random;
  std::vector<size_t> grad_outputs = {};  // outputs that carry gradients; empty: every floating one
  double tolerance_scale = 1;             // multiplies the dtype tolerances (accumulating ops)
  std::string note;                       // how the op is called when not obvious
  bool differentiable() const { return !grad_inputs.empty(); }
};

// A schema with no entry of its own: a backward helper (or the kernel under a composite)
// exercised by its forward entry's forward or backward.
struct CoveredOp {
  std::string name;
  std::string covered_by;  // an entry's name
};

// ---------------------------------------------------------------------------------------
// Sample helpers.

inline const std::vector<ScalarType> kAllTypes = {kBool,    kUInt8,     kInt8,    kInt16,  kInt32,
                                                  kInt64,   kFloat16,   kBFloat16, kFloat32, kFloat64};
inline const std::vector<ScalarType> kAllButBool = {kUInt8,  kInt8,     kInt16,   kInt32,
                                                    kInt64,  kFloat16,  kBFloat16, kFloat32, kFloat64};
inline const std::vector<ScalarType> kFloating = {kFloat16, kBFloat16, kFloat32, kFloat64};
inline const std::vector<ScalarType> kFloat32And64 = {kFloat32, kFloat64};

// The values an input takes: uniform in [low, high) (integers in the same range, clipped at 0
// for uint8 and bool's 0/1), or distinct values (no ties, for max, pooling, sorting-like ops).
struct Domain {
  double low = -2, high = 2;
  bool distinct = false;
};
inline constexpr Domain kPositive{0.5, 2.0};
inline constexpr Domain kDistinct{-2, 2, true};

inline std::vector<int64_t> base_sizes(std::vector<int64_t> sizes, Layout layout) {
  switch (layout) {
    case Layout::Contiguous: break;
    case Layout::Transposed: std::swap(sizes[sizes.size() - 2], sizes[sizes.size() - 1]); break;
    case Layout::Sliced: sizes.back() *= 2; break;
    case Layout::Expanded: sizes.front() = 1; break;
  }
  return sizes;
}

// The view the op sees of a base made by make_arg with these sizes and layout.
inline Tensor layout_view(const Tensor& base, Layout layout, IntArrayRef sizes) {
  switch (layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: return base.transpose(-2, -1);
    case Layout::Sliced: return base.slice(-1, 0, std::nullopt, 2);
    case Layout::Expanded: return base.expand(sizes);
  }
  return base;
}

inline uint64_t& sample_seed() {
  static uint64_t seed = 0;
  return seed;
}

inline Tensor make_values(const std::vector<int64_t>& sizes, ScalarType dtype, Domain domain) {
  const uint64_t seed = ++sample_seed();
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (dtype == kBool) {
    manual_seed(seed);
    return randint(0, 2, sizes).to(kBool);
  }
  const bool integral = !is_floating_point(dtype);
  if (domain.distinct) {
    // Distinct values m / 8 + 1 / 32 = (4m + 1) / 32 for distinct integers m (integers m for
    // integral dtypes): exact in every dtype up to 63 values, never 0, and with distinct
    // absolute values, so abs, relu, clamp, max and norm(p=inf) are differentiable there.
    std::vector<double> values(static_cast<size_t>(numel));
    std::iota(values.begin(), values.end(), 0.0);
    std::shuffle(values.begin(), values.end(), std::mt19937_64(seed));
    const double offset = dtype == kUInt8 ? 0.0 : static_cast<double>(numel / 2);
    for (double& v : values) v = integral ? v - offset : (v - offset) / 8.0 + 1.0 / 32.0;
    return tensor(values, sizes).to(dtype);
  }
  manual_seed(seed);
  if (integral) {
    int64_t low = static_cast<int64_t>(std::floor(domain.low)), high = static_cast<int64_t>(std::ceil(domain.high));
    if (dtype == kUInt8 || domain.low > 0) low = std::max<int64_t>(low, domain.low > 0 ? 1 : 0);
    if (high <= low) high = low + 1;
    return randint(low, high, sizes).to(dtype);
  }
  return (rand(sizes, kFloat64) * (domain.high - domain.low) + domain.low).to(dtype);
}

// An input of logical `sizes` in `layout`, with values of `domain`.
inline Arg make_arg(const std::vector<int64_t>& sizes, ScalarType dtype, Layout layout = Layout::Contiguous,
                    Domain domain = {}) {
  return Arg{make_values(base_sizes(sizes, layout), dtype, domain), layout, sizes};
}

// int64 indices uniform in [0, high).
inline Arg make_index(const std::vector<int64_t>& sizes, int64_t high) {
  manual_seed(++sample_seed());
  return Arg{randint(0, high, sizes), Layout::Contiguous, sizes, /*index=*/true};
}

inline std::string dtype_name(ScalarType dtype) {
  std::ostringstream out;
  out << dtype;
  return out.str();
}

// A fixed tensor (already made) as a contiguous input.
inline Arg fixed(const Tensor& t) { return Arg{t, Layout::Contiguous, t.sizes().vec()}; }

// A shape and layout for one input of a sample set.
struct Shape {
  std::vector<int64_t> sizes;
  Layout layout = Layout::Contiguous;
};

inline std::string describe(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(shape.sizes[i]);
  text += "]";
  switch (shape.layout) {
    case Layout::Contiguous: break;
    case Layout::Transposed: text += " transposed"; break;
    case Layout::Sliced: text += " sliced"; break;
    case Layout::Expanded: text += " expanded"; break;
  }
  return text;
}

// The shapes every one-input op is tried on: 0-d, empty, 1-d to 3-d, and non-contiguous.
inline const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> shapes = {
      {{}},        {{0}},          {{2, 0}},     {{5}}, {{3, 4}}, {{3, 4}, Layout::Transposed},
      {{3, 4}, Layout::Sliced}, {{3, 4}, Layout::Expanded}, {{2, 3, 2}},
  };
  return shapes;
}

// Pairs for two-input ops: same shapes, broadcasting both ways, 0-d with n-d, empty, strided.
inline const std::vector<std::pair<Shape, Shape>>& binary_shapes() {
  static const std::vector<std::pair<Shape, Shape>> shapes = {
      {{{}}, {{}}},
      {{{5}}, {{5}}},
      {{{3, 4}}, {{3, 4}}},
      {{{3, 4}}, {{4}}},
      {{{3, 1}}, {{1, 4}}},
      {{{}}, {{3, 4}}},
      {{{2, 3, 4}}, {{}}},
      {{{3, 4}, Layout::Transposed}, {{3, 4}, Layout::Sliced}},
      {{{3, 4}, Layout::Expanded}, {{3, 4}, Layout::Transposed}},
      {{{0, 4}}, {{4}}},
  };
  return shapes;
}

// Pairs whose first shape is the broadcast shape (for in-place ops).
inline const std::vector<std::pair<Shape, Shape>>& inplace_binary_shapes() {
  static const std::vector<std::pair<Shape, Shape>> shapes = {
      {{{}}, {{}}},
      {{{5}}, {{5}}},
      {{{3, 4}}, {{4}}},
      {{{3, 4}}, {{3, 1}}},
      {{{3, 4}}, {{}}},
      {{{3, 4}, Layout::Transposed}, {{3, 4}, Layout::Sliced}},
      {{{0, 4}}, {{4}}},
  };
  return shapes;
}

using UnaryFn = std::function<tensor_list(const Tensor&)>;
using BinaryFn = std::function<tensor_list(const Tensor&, const Tensor&)>;

inline std::vector<Sample> unary_samples(ScalarType dtype, const UnaryFn& fn, Domain domain = {},
                                         const std::vector<Shape>& shapes = unary_shapes(), std::string suffix = "") {
  std::vector<Sample> samples;
  for (const Shape& shape : shapes)
    samples.push_back({describe(shape) + suffix, {make_arg(shape.sizes, dtype, shape.layout, domain)},
                       [fn](const tensor_list& in, const Env&) { return fn(in[0]); }});
  return samples;
}

inline std::vector<Sample> binary_samples(ScalarType dtype, const BinaryFn& fn, Domain first = {}, Domain second = {},
                                          const std::vector<std::pair<Shape, Shape>>& shapes = binary_shapes()) {
  std::vector<Sample> samples;
  for (const auto& [a, b] : shapes)
    samples.push_back({describe(a) + " with " + describe(b),
                       {make_arg(a.sizes, dtype, a.layout, first), make_arg(b.sizes, dtype, b.layout, second)},
                       [fn](const tensor_list& in, const Env&) { return fn(in[0], in[1]); }});
  return samples;
}

// Appends samples made by `more` (to combine sample sets).
inline std::vector<Sample> concat(std::vector<Sample> a, std::vector<Sample> b) {
  for (Sample& s : b) a.push_back(std::move(s));
  return a;
}

// A Sample from a description, args and a call on the laid-out inputs.
inline Sample sample(std::string desc, std::vector<Arg> args, std::function<tensor_list(const tensor_list&)> fn) {
  return {std::move(desc), std::move(args), [fn = std::move(fn)](const tensor_list& in, const Env&) { return fn(in); }};
}

// The op table (op_table_entries.h) and the schemas covered through other entries.
const std::vector<OpEntry>& op_table();
const std::vector<CoveredOp>& covered_ops();

}  // namespace strata::optable
