#pragma once
// Sample sets shared by the op table's entries (op_table_entries.h): reductions, one- and two-input
// ops, tensor-scalar and in-place ops.
#include <cmath>
#include <limits>

#include "op_table.h"

namespace strata::optable {

namespace entries {

using D = std::vector<size_t>;

// A one-output op as a UnaryFn / BinaryFn.
template <class F>
UnaryFn u(F f) {
  return [f](const Tensor& x) { return tensor_list{f(x)}; };
}
template <class F>
BinaryFn b(F f) {
  return [f](const Tensor& x, const Tensor& y) { return tensor_list{f(x, y)}; };
}

// A Scalar suited to the dtype: `floating` for floating dtypes, `integral` otherwise.
inline Scalar scalar_for(ScalarType dtype, double floating, int64_t integral) {
  if (dtype == kBool) return Scalar(integral != 0);
  return is_floating_point(dtype) ? Scalar(floating) : Scalar(integral);
}

// Reduction samples: (shape, dims, keepdim), including all dims, 0-d and empty.
struct ReduceCase {
  Shape shape;
  std::vector<int64_t> dims;
  bool keepdim;
};
inline std::vector<ReduceCase> reduce_cases(bool allow_empty_groups) {
  std::vector<ReduceCase> cases = {
      {{{3, 4}}, {1}, false},
      {{{3, 4}}, {0}, true},
      {{{3, 4}, Layout::Transposed}, {-1}, false},
      {{{2, 3, 2}}, {0, 2}, false},
      {{{2, 3, 2}, Layout::Sliced}, {1}, true},
      {{{3, 4}, Layout::Expanded}, {0}, false},
      {{{}}, {0}, false},
      {{{0, 3}}, {1}, false},
  };
  if (allow_empty_groups) cases.push_back({{{3, 0}}, {1}, true});
  return cases;
}

inline std::string describe_dims(const std::vector<int64_t>& dims, bool keepdim) {
  std::string text = " dims {";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "}" + (keepdim ? " keepdim" : "");
}

using DimsFn = std::function<Tensor(const Tensor&, IntArrayRef, bool)>;
inline std::vector<Sample> reduce_samples(ScalarType dtype, const DimsFn& fn, bool allow_empty_groups,
                                          Domain domain = {}) {
  std::vector<Sample> samples;
  for (const ReduceCase& c : reduce_cases(allow_empty_groups)) {
    samples.push_back(sample(describe(c.shape) + describe_dims(c.dims, c.keepdim),
                             {make_arg(c.shape.sizes, dtype, c.shape.layout, domain)},
                             [fn, c](const tensor_list& in) { return tensor_list{fn(in[0], c.dims, c.keepdim)}; }));
  }
  return samples;
}

// One-dim reductions (dim, keepdim): the first dim of each case.
using DimFn = std::function<tensor_list(const Tensor&, int64_t, bool)>;
inline std::vector<Sample> dim_samples(ScalarType dtype, const DimFn& fn, bool allow_empty_groups, Domain domain = {}) {
  std::vector<Sample> samples;
  for (const ReduceCase& c : reduce_cases(allow_empty_groups)) {
    const int64_t dim = c.dims.front();
    samples.push_back(sample(describe(c.shape) + describe_dims({dim}, c.keepdim),
                             {make_arg(c.shape.sizes, dtype, c.shape.layout, domain)},
                             [fn, dim, c](const tensor_list& in) { return fn(in[0], dim, c.keepdim); }));
  }
  return samples;
}

// Non-empty unary shapes (for reductions that throw on empty input).
inline std::vector<Shape> nonempty_shapes() {
  std::vector<Shape> shapes;
  for (const Shape& s : unary_shapes()) {
    int64_t numel = 1;
    for (int64_t v : s.sizes) numel *= v;
    if (numel > 0) shapes.push_back(s);
  }
  return shapes;
}

inline OpEntry unary_entry(std::string name, std::vector<ScalarType> dtypes, D grad, const UnaryFn& fn,
                           Domain domain = {}) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.grad_inputs = std::move(grad);
  e.samples = [fn, domain](ScalarType dtype) { return unary_samples(dtype, fn, domain); };
  return e;
}

inline OpEntry binary_entry(std::string name, std::vector<ScalarType> dtypes, D grad, const BinaryFn& fn,
                            Domain first = {}, Domain second = {}) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.grad_inputs = std::move(grad);
  e.samples = [fn, first, second](ScalarType dtype) {
    std::vector<Sample> samples = binary_samples(dtype, fn, first, second);
    // Type promotion: the other operand int64 (or float32 for integral dtypes).
    const ScalarType other = is_floating_point(dtype) ? kInt64 : kFloat32;
    samples.push_back({"[3, 4] with [4] of another dtype",
                       {make_arg({3, 4}, dtype, Layout::Contiguous, first), make_arg({4}, other, Layout::Contiguous, second)},
                       [fn](const tensor_list& in, const Env&) { return fn(in[0], in[1]); }});
    // A 0-d operand of a wider dtype of the same kind does not widen the result; of another
    // kind (floating with integral) it does.
    samples.push_back({"[3, 4] with a 0-d float64",
                       {make_arg({3, 4}, dtype, Layout::Contiguous, first), make_arg({}, kFloat64, Layout::Contiguous, second)},
                       [fn](const tensor_list& in, const Env&) { return fn(in[0], in[1]); }});
    samples.push_back({"0-d with [4] int64",
                       {make_arg({}, dtype, Layout::Contiguous, first), make_arg({4}, kInt64, Layout::Contiguous, second)},
                       [fn](const tensor_list& in, const Env&) { return fn(in[0], in[1]); }});
    return samples;
  };
  return e;
}

// An op applied in place to a clone of its first input (so the base stays a leaf).
template <class F>
BinaryFn inplace(F f) {
  return [f](const Tensor& x, const Tensor& y) {
    Tensor self = x.clone();
    f(self, y);
    return tensor_list{self};
  };
}

inline OpEntry inplace_binary_entry(std::string name, std::vector<ScalarType> dtypes, D grad, const BinaryFn& fn,
                                    Domain second = {}) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.grad_inputs = std::move(grad);
  e.samples = [fn, second](ScalarType dtype) {
    return binary_samples(dtype, fn, {}, second, inplace_binary_shapes());
  };
  return e;
}

// Tensor-scalar ops: the scalar of the dtype's kind, and an int scalar on a floating tensor.
inline OpEntry scalar_entry(std::string name, std::vector<ScalarType> dtypes, D grad,
                            std::function<Tensor(const Tensor&, const Scalar&)> fn, double floating = 1.5,
                            int64_t integral = 2, Domain domain = {}) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.grad_inputs = std::move(grad);
  e.samples = [=](ScalarType dtype) {
    const Scalar s = scalar_for(dtype, floating, integral);
    std::vector<Sample> samples = unary_samples(dtype, u([fn, s](const Tensor& x) { return fn(x, s); }), domain);
    samples.push_back(sample("[3, 4] with an int scalar", {make_arg({3, 4}, dtype, Layout::Contiguous, domain)},
                             [fn, integral](const tensor_list& in) { return tensor_list{fn(in[0], Scalar(integral))}; }));
    return samples;
  };
  return e;
}

}  // namespace entries

}  // namespace strata::optable
