#pragma once
// The op table's entries for reductions, linear algebra, shapes, indexing, nn, losses and the
// fused optimizer steps (see op_table.h). Included once, by tests/ops/test_op_table.cpp.
#include "op_table_samples.h"

namespace strata::optable {
namespace entries {

inline OpEntry entry(std::string name, std::vector<ScalarType> dtypes, D grad,
                     std::function<std::vector<Sample>(ScalarType)> samples) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.grad_inputs = std::move(grad);
  e.samples = std::move(samples);
  return e;
}

// ---------------------------------------------------------------------------------------
// Reductions (ops/reduce.cpp, ops/reduce_minmax.cpp, ops/reduce_stats.cpp).

inline std::vector<OpEntry> reduce_entries() {
  std::vector<OpEntry> t;
  const Domain near_one{0.5, 1.5};
  t.push_back(entry("strata::sum", kAllTypes, {0}, [](ScalarType dtype) {
    return concat(unary_samples(dtype, u([](const Tensor& x) { return sum(x); })),
                  concat(unary_samples(dtype, u([](const Tensor& x) { return sum(x, kFloat64); }), {}, {{{3, 4}}}, " to float64"),
                         unary_samples(dtype, u([](const Tensor& x) { return sum(x, kInt64); }), {}, {{{3, 4}}}, " to int64")));
  }));
  t.push_back(entry("strata::sum.dim_IntList", kAllTypes, {0}, [](ScalarType dtype) {
    return reduce_samples(dtype, [](const Tensor& x, IntArrayRef dims, bool keepdim) { return sum(x, dims, keepdim); }, true);
  }));
  t.push_back(entry("strata::mean", kFloating, {0}, [](ScalarType dtype) {
    return unary_samples(dtype, u([](const Tensor& x) { return mean(x); }), {}, nonempty_shapes());
  }));
  t.push_back(entry("strata::mean.dim", kFloating, {0}, [](ScalarType dtype) {
    return concat(
        reduce_samples(dtype, [](const Tensor& x, IntArrayRef dims, bool keepdim) { return mean(x, dims, keepdim); }, false),
        unary_samples(dtype, u([](const Tensor& x) { return mean(x, {0}, false, kFloat64); }), {}, {{{3, 4}}}, " to float64"));
  }));
  t.push_back(entry("strata::prod", kAllTypes, {0}, [near_one](ScalarType dtype) {
    return concat(unary_samples(dtype, u([](const Tensor& x) { return prod(x); }), near_one),
                  unary_samples(dtype, u([](const Tensor& x) { return prod(x, kFloat64); }), near_one, {{{3, 4}}},
                                " to float64"));
  }));
  t.push_back(entry("strata::prod.dim_int", kAllTypes, {0}, [near_one](ScalarType dtype) {
    return dim_samples(dtype, [](const Tensor& x, int64_t dim, bool keepdim) { return tensor_list{prod(x, dim, keepdim)}; },
                       true, near_one);
  }));
  for (const bool is_max : {true, false}) {
    const std::string name = is_max ? "max" : "min";
    t.push_back(entry("strata::" + name, kAllTypes, {0}, [is_max](ScalarType dtype) {
      return unary_samples(dtype, u([is_max](const Tensor& x) { return is_max ? max(x) : min(x); }), kDistinct,
                           nonempty_shapes());
    }));
    OpEntry by_dim = entry("strata::" + name + ".dim", kAllTypes, {0}, [is_max](ScalarType dtype) {
      return dim_samples(dtype, [is_max](const Tensor& x, int64_t dim, bool keepdim) {
        auto [values, indices] = is_max ? max(x, dim, keepdim) : min(x, dim, keepdim);
        return tensor_list{values, indices};
      }, false, kDistinct);
    });
    by_dim.grad_outputs = {0};
    t.push_back(by_dim);
    t.push_back(entry(is_max ? "strata::argmax" : "strata::argmin", kAllTypes, {}, [is_max](ScalarType dtype) {
      const auto op = [is_max](const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
        return is_max ? argmax(x, dim, keepdim) : argmin(x, dim, keepdim);
      };
      return concat(unary_samples(dtype, u([op](const Tensor& x) { return op(x, std::nullopt, false); }), kDistinct,
                                  nonempty_shapes()),
                    dim_samples(dtype, [op](const Tensor& x, int64_t dim, bool keepdim) {
                      return tensor_list{op(x, dim, keepdim)};
                    }, false, kDistinct));
    }));
  }
  for (const bool is_std : {false, true}) {
    const std::string name = is_std ? "std" : "var";
    t.push_back(entry("strata::" + name + ".dim", kFloating, {0}, [is_std](ScalarType dtype) {
      const auto op = [is_std](const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
        return is_std ? std(x, dims, unbiased, keepdim) : var(x, dims, unbiased, keepdim);
      };
      std::vector<Sample> samples;
      const std::vector<ReduceCase> cases = {{{{3, 4}}, {1}, false},
                                             {{{3, 4}, Layout::Transposed}, {0}, true},
                                             {{{2, 3, 2}, Layout::Sliced}, {0, 2}, false},
                                             {{{2, 3, 2}}, {}, false},
                                             {{{0, 3}}, {1}, false}};
      for (const ReduceCase& c : cases)
        for (const bool unbiased : {true, false})
          samples.push_back(sample(describe(c.shape) + describe_dims(c.dims, c.keepdim) + (unbiased ? "" : " biased"),
                                   {make_arg(c.shape.sizes, dtype, c.shape.layout)}, [op, c, unbiased](const tensor_list& in) {
                                     return tensor_list{op(in[0], c.dims, unbiased, c.keepdim)};
                                   }));
      return samples;
    }));
    OpEntry all = entry("strata::" + name, kFloating, {0}, [name](ScalarType dtype) {
      const std::string op = "strata::" + name;
      std::vector<Sample> samples;
      for (const Shape& shape : std::vector<Shape>{{{5}}, {{3, 4}, Layout::Transposed}, {{2, 3, 2}}})
        for (const bool unbiased : {true, false})
          samples.push_back(sample(describe(shape) + (unbiased ? "" : " biased"),
                                   {make_arg(shape.sizes, dtype, shape.layout)}, [op, unbiased](const tensor_list& in) {
                                     return tensor_list{call(op, in[0], unbiased).to_tensor()};
                                   }));
      return samples;
    });
    all.note = "no free function: called boxed through the dispatcher";
    t.push_back(all);
  }
  t.push_back(entry("strata::logsumexp", kAllTypes, {0}, [](ScalarType dtype) {
    return reduce_samples(dtype, [](const Tensor& x, IntArrayRef dims, bool keepdim) { return logsumexp(x, dims, keepdim); },
                          true);
  }));
  OpEntry norm_entry = entry("strata::norm.Scalar", kFloating, {0}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    const double inf = std::numeric_limits<double>::infinity();
    for (const double p : {2.0, 1.0, 3.0, inf, 0.0})
      samples = concat(std::move(samples), unary_samples(dtype, u([p](const Tensor& x) { return norm(x, p); }), kDistinct,
                                                         nonempty_shapes(), " p=" + std::to_string(p)));
    return samples;
  });
  t.push_back(norm_entry);
  return t;
}

// ---------------------------------------------------------------------------------------
// Linear algebra (ops/linalg.cpp).

using PairCases = std::vector<std::pair<Shape, Shape>>;
inline std::vector<Sample> pair_samples(ScalarType dtype, const PairCases& cases, const BinaryFn& fn) {
  return binary_samples(dtype, fn, {}, {}, cases);
}

inline std::vector<OpEntry> linalg_entries() {
  std::vector<OpEntry> t;
  const std::vector<ScalarType> dtypes = kAllButBool;
  OpEntry mm_entry = entry("strata::mm", dtypes, {0, 1}, [](ScalarType dtype) {
    return pair_samples(dtype,
                        {{{{3, 4}}, {{4, 2}}},
                         {{{3, 4}, Layout::Transposed}, {{4, 2}, Layout::Sliced}},
                         {{{0, 4}}, {{4, 2}}},
                         {{{3, 0}}, {{0, 2}}},
                         {{{1, 1}}, {{1, 5}}}},
                        b([](const Tensor& x, const Tensor& y) { return mm(x, y); }));
  });
  mm_entry.tolerance_scale = 4;
  t.push_back(mm_entry);
  OpEntry bmm_entry = entry("strata::bmm", dtypes, {0, 1}, [](ScalarType dtype) {
    return pair_samples(dtype,
                        {{{{2, 3, 4}}, {{2, 4, 5}}},
                         {{{2, 3, 4}, Layout::Transposed}, {{2, 4, 5}, Layout::Expanded}},
                         {{{0, 3, 4}}, {{0, 4, 5}}},
                         {{{2, 3, 0}}, {{2, 0, 5}}}},
                        b([](const Tensor& x, const Tensor& y) { return bmm(x, y); }));
  });
  bmm_entry.tolerance_scale = 4;
  t.push_back(bmm_entry);
  OpEntry matmul_entry = entry("strata::matmul", dtypes, {0, 1}, [](ScalarType dtype) {
    return pair_samples(dtype,
                        {{{{4}}, {{4}}},
                         {{{3, 4}}, {{4}}},
                         {{{4}}, {{4, 2}}},
                         {{{3, 4}, Layout::Transposed}, {{4, 2}}},
                         {{{2, 3, 4}}, {{4, 5}}},
                         {{{2, 1, 3, 4}}, {{3, 4, 2}}},
                         {{{4}}, {{2, 4, 3}}},
                         {{{0, 3, 4}}, {{4, 2}}}},
                        b([](const Tensor& x, const Tensor& y) { return matmul(x, y); }));
  });
  matmul_entry.tolerance_scale = 4;
  t.push_back(matmul_entry);
  t.push_back(entry("strata::t", kAllTypes, {0}, [](ScalarType dtype) {
    return unary_samples(dtype, u([](const Tensor& x) { return strata::t(x); }), {},
                         {{{}}, {{5}}, {{3, 4}}, {{3, 4}, Layout::Transposed}, {{0, 3}}});
  }));
  OpEntry linear_entry = entry("strata::linear", kAllButBool, {0, 1, 2}, [](ScalarType dtype) {
    std::vector<Sample> samples = pair_samples(dtype,
                                               {{{{3, 4}}, {{2, 4}}},
                                                {{{4}}, {{2, 4}}},
                                                {{{2, 3, 4}, Layout::Transposed}, {{2, 4}, Layout::Sliced}},
                                                {{{0, 4}}, {{2, 4}}}},
                                               b([](const Tensor& x, const Tensor& w) { return linear(x, w); }));
    for (const Shape& input : std::vector<Shape>{{{3, 4}}, {{4}}, {{2, 3, 4}}, {{0, 4}}})
      samples.push_back(sample(describe(input) + " with bias",
                               {make_arg(input.sizes, dtype), make_arg({2, 4}, dtype), make_arg({2}, dtype)},
                               [](const tensor_list& in) { return tensor_list{linear(in[0], in[1], in[2])}; }));
    return samples;
  });
  linear_entry.tolerance_scale = 4;
  t.push_back(linear_entry);
  return t;
}

// ---------------------------------------------------------------------------------------
// Shapes, views and copies (ops/view.cpp, ops/shape.cpp, ops/tensor_methods.cpp).

inline std::vector<OpEntry> shape_entries() {
  std::vector<OpEntry> t;
  const std::vector<Shape> matrices = {{{3, 4}}, {{3, 4}, Layout::Transposed}, {{3, 4}, Layout::Sliced},
                                       {{3, 4}, Layout::Expanded}, {{0, 4}}};
  const auto shaped = [](std::string name, D grad, std::vector<Shape> shapes, UnaryFn fn) {
    return entry(std::move(name), kAllTypes, std::move(grad), [shapes, fn](ScalarType dtype) {
      return unary_samples(dtype, fn, {}, shapes);
    });
  };
  t.push_back(shaped("strata::view", {0}, {{{3, 4}}, {{2, 3, 2}}, {{0, 4}}, {{}}}, [](const Tensor& x) {
    if (x.dim() == 0) return tensor_list{view(x, {-1}), view(x, {1, 1})};
    return tensor_list{view(x, {-1}), view(x, {x.size(0), 1, x.numel() == 0 ? 4 : x.numel() / x.size(0)})};
  }));
  t.push_back(shaped("strata::reshape", {0}, matrices, [](const Tensor& x) {
    return tensor_list{reshape(x, {-1}), reshape(x, {4, -1}), reshape(x, {2, 1, -1})};
  }));
  t.push_back(shaped("strata::transpose.int", {0}, {{{3, 4}}, {{2, 3, 2}, Layout::Sliced}, {{0, 4}}},
                     u([](const Tensor& x) { return transpose(x, 0, -1); })));
  t.push_back(shaped("strata::permute", {0}, {{{2, 3, 4}}, {{2, 3, 4}, Layout::Transposed}, {{2, 0, 4}}},
                     u([](const Tensor& x) { return permute(x, {2, 0, 1}); })));
  t.push_back(shaped("strata::expand", {0}, {{{3, 1}}, {{1, 1}}, {{3, 1}, Layout::Expanded}, {{0, 1}}},
                     u([](const Tensor& x) { return expand(x, {2, x.size(0), 4}); })));
  t.push_back(shaped("strata::flatten.using_ints", {0}, {{{2, 3, 4}}, {{2, 3, 4}, Layout::Transposed}, {{2, 0, 4}}},
                     [](const Tensor& x) { return tensor_list{flatten(x), flatten(x, 1), flatten(x, 0, 1)}; }));
  t.push_back(shaped("strata::squeeze", {0}, {{{3, 1, 4, 1}}, {{1, 1}, Layout::Transposed}, {{}}, {{0, 1}}},
                     u([](const Tensor& x) { return squeeze(x); })));
  t.push_back(shaped("strata::squeeze.dim", {0}, {{{3, 1, 4}}, {{3, 1, 4}, Layout::Sliced}, {{0, 1, 2}}},
                     [](const Tensor& x) { return tensor_list{squeeze(x, 1), squeeze(x, 0)}; }));
  t.push_back(shaped("strata::unsqueeze", {0}, {{{}}, {{3, 4}}, {{3, 4}, Layout::Transposed}, {{0, 4}}},
                     [](const Tensor& x) { return tensor_list{unsqueeze(x, 0), unsqueeze(x, -1)}; }));
  t.push_back(shaped("strata::split.Tensor", {0}, {{{5, 4}}, {{5, 4}, Layout::Transposed}, {{0, 4}}},
                     [](const Tensor& x) { return split(x, 2); }));
  t.push_back(shaped("strata::split_with_sizes", {0}, {{{5, 4}}, {{5, 4}, Layout::Sliced}},
                     [](const Tensor& x) { return split_with_sizes(x, {1, 0, 3}, 1); }));
  t.push_back(shaped("strata::chunk", {0}, {{{5, 4}}, {{5, 4}, Layout::Transposed}, {{0, 4}}},
                     [](const Tensor& x) { return chunk(x, 3); }));
  t.push_back(entry("strata::cat", kAllTypes, {0, 1}, [](ScalarType dtype) {
    return concat(concat(pair_samples(dtype,
                               {{{{2, 4}}, {{3, 4}}},
                                {{{2, 4}, Layout::Transposed}, {{0, 4}}},
                                {{{2, 4}}, {{0}}}},
                               b([](const Tensor& x, const Tensor& y) { return cat({x, y}); })),
                  pair_samples(dtype, {{{{3, 2}}, {{3, 4}, Layout::Sliced}}},
                               b([](const Tensor& x, const Tensor& y) { return cat({x, y, x}, 1); }))),
                  std::vector<Sample>{
                      sample("[2, 4] with [3, 4] int64 and [0] float64 (promotion)",
                             {make_arg({2, 4}, dtype), make_arg({3, 4}, kInt64), make_arg({0}, kFloat64)},
                             [](const tensor_list& in) { return tensor_list{cat({in[0], in[1], in[2]})}; })});
  }));
  t.push_back(entry("strata::stack", kAllTypes, {0, 1}, [](ScalarType dtype) {
    return pair_samples(dtype,
                        {{{{}}, {{}}}, {{{3, 4}}, {{3, 4}, Layout::Transposed}}, {{{0, 4}}, {{0, 4}}}},
                        [](const Tensor& x, const Tensor& y) { return tensor_list{stack({x, y}), stack({x, y}, -1)}; });
  }));
  t.push_back(shaped("strata::contiguous", {0}, matrices, u([](const Tensor& x) { return contiguous(x); })));
  t.push_back(shaped("strata::clone", {0}, matrices, u([](const Tensor& x) { return clone(x); })));
  t.push_back(entry("strata::copy_", kAllTypes, {0}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const Shape& src : std::vector<Shape>{{{3, 4}}, {{4}}, {{3, 4}, Layout::Transposed}, {{}}, {{0, 4}}})
      for (const ScalarType to : {dtype, kFloat32, kInt64})
        samples.push_back(sample(describe(src) + " into " + dtype_name(to), {make_arg(src.sizes, dtype, src.layout)},
                                 [to, zero_rows = src.sizes.size() == 2 && src.sizes[0] == 0](const tensor_list& in) {
                                   Tensor self = zeros({zero_rows ? 0 : 3, 4}, in[0].options().dtype(to));
                                   copy_(self, in[0]);
                                   return tensor_list{self};
                                 }));
    return samples;
  }));
  t.push_back(shaped("strata::_to_copy", {0}, matrices, [](const Tensor& x) {
    return tensor_list{to(x, kFloat64), to(x, kFloat32), to(x, x.dtype(), /*copy=*/true), to(x, kInt64)};
  }));
  t.push_back(shaped("strata::as_strided", {0}, {{{3, 4}}, {{3, 4}, Layout::Transposed}}, [](const Tensor& x) {
    return tensor_list{as_strided(x, {2, 2}, {1, 2}), as_strided(x, {3, 3}, {1, 1}, 1)};
  }));
  return t;
}

// ---------------------------------------------------------------------------------------
// Indexing (ops/index.cpp).

inline std::vector<OpEntry> index_entries() {
  std::vector<OpEntry> t;
  const std::vector<Shape> matrices = {{{5, 4}}, {{5, 4}, Layout::Transposed}, {{5, 4}, Layout::Expanded}};
  t.push_back(entry("strata::slice.Tensor", kAllTypes, {0}, [matrices](ScalarType dtype) {
    return unary_samples(dtype, [](const Tensor& x) {
      return tensor_list{slice(x), slice(x, 0, 1, 4, 2), slice(x, 1, -3), slice(x, 0, 7, 9), slice(x, -1, 0, 4, 3)};
    }, {}, matrices);
  }));
  t.push_back(entry("strata::select.int", kAllTypes, {0}, [matrices](ScalarType dtype) {
    return unary_samples(dtype, [](const Tensor& x) { return tensor_list{select(x, 0, 1), select(x, 1, -1)}; }, {},
                         matrices);
  }));
  t.push_back(entry("strata::narrow", kAllTypes, {0}, [matrices](ScalarType dtype) {
    return unary_samples(dtype, [](const Tensor& x) { return tensor_list{narrow(x, 0, 1, 3), narrow(x, 1, 2, 0)}; }, {},
                         matrices);
  }));
  t.push_back(entry("strata::slice_backward", kAllTypes, {0}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[2, 4] into [5, 4]", {make_arg({2, 4}, dtype)},
               [](const tensor_list& in) { return tensor_list{slice_backward(in[0], {5, 4}, 0, 1, 4, 2)}; }),
        sample("[5, 2] transposed into [5, 4]", {make_arg({5, 2}, dtype, Layout::Transposed)},
               [](const tensor_list& in) { return tensor_list{slice_backward(in[0], {5, 4}, 1, 2, 4, 1)}; })};
  }));
  t.push_back(entry("strata::select_backward", kAllTypes, {0}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[4] into [5, 4]", {make_arg({4}, dtype)},
               [](const tensor_list& in) { return tensor_list{select_backward(in[0], {5, 4}, 0, 3)}; }),
        sample("[] into [3]", {make_arg({}, dtype)},
               [](const tensor_list& in) { return tensor_list{select_backward(in[0], {3}, 0, -1)}; })};
  }));
  t.push_back(entry("strata::index_select", kAllTypes, {0}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[5, 4] dim 0", {make_arg({5, 4}, dtype), make_index({6}, 5)},
               [](const tensor_list& in) { return tensor_list{index_select(in[0], 0, in[1])}; }),
        sample("[5, 4] transposed dim 1", {make_arg({5, 4}, dtype, Layout::Transposed), make_index({3}, 4)},
               [](const tensor_list& in) { return tensor_list{index_select(in[0], 1, in[1])}; }),
        sample("[5] empty index", {make_arg({5}, dtype), make_index({0}, 5)},
               [](const tensor_list& in) { return tensor_list{index_select(in[0], 0, in[1])}; }),
        sample("[] 0-d", {make_arg({}, dtype), make_index({}, 1)},
               [](const tensor_list& in) { return tensor_list{index_select(in[0], 0, in[1])}; }),
        sample("[5, 4] int32 index", {make_arg({5, 4}, dtype), make_index({4}, 5).as(kInt32)},
               [](const tensor_list& in) { return tensor_list{index_select(in[0], 0, in[1])}; })};
  }));
  t.push_back(entry("strata::index_add", kAllTypes, {0, 2}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[5, 4] dim 0", {make_arg({5, 4}, dtype), make_index({6}, 5), make_arg({6, 4}, dtype)},
               [](const tensor_list& in) { return tensor_list{index_add(in[0], 0, in[1], in[2])}; }),
        sample("[5, 4] transposed dim 1 alpha 2",
               {make_arg({5, 4}, dtype, Layout::Transposed), make_index({3}, 4), make_arg({5, 3}, dtype, Layout::Sliced)},
               [](const tensor_list& in) { return tensor_list{index_add(in[0], 1, in[1], in[2], 2)}; }),
        sample("[5] empty index", {make_arg({5}, dtype), make_index({0}, 5), make_arg({0}, dtype)},
               [](const tensor_list& in) { return tensor_list{index_add(in[0], 0, in[1], in[2])}; })};
  }));
  t.push_back(entry("strata::gather", kAllTypes, {0}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[5, 4] dim 0", {make_arg({5, 4}, dtype), make_index({3, 4}, 5)},
               [](const tensor_list& in) { return tensor_list{gather(in[0], 0, in[1])}; }),
        sample("[5, 4] transposed dim 1", {make_arg({5, 4}, dtype, Layout::Transposed), make_index({5, 6}, 4)},
               [](const tensor_list& in) { return tensor_list{gather(in[0], 1, in[1])}; }),
        sample("[5, 4] empty index", {make_arg({5, 4}, dtype), make_index({0, 4}, 5)},
               [](const tensor_list& in) { return tensor_list{gather(in[0], 0, in[1])}; })};
  }));
  t.push_back(entry("strata::scatter_add", kAllTypes, {0, 2}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[5, 4] dim 0", {make_arg({5, 4}, dtype), make_index({3, 4}, 5), make_arg({3, 4}, dtype)},
               [](const tensor_list& in) { return tensor_list{scatter_add(in[0], 0, in[1], in[2])}; }),
        sample("[5, 4] transposed dim 1",
               {make_arg({5, 4}, dtype, Layout::Transposed), make_index({5, 2}, 4), make_arg({5, 3}, dtype)},
               [](const tensor_list& in) { return tensor_list{scatter_add(in[0], 1, in[1], in[2])}; })};
  }));
  t.push_back(entry("strata::masked_fill.Scalar", kAllTypes, {0}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const auto& [x, m] : inplace_binary_shapes())
      samples.push_back(sample(describe(x) + " mask " + describe(m), {make_arg(x.sizes, dtype, x.layout), make_arg(m.sizes, kBool, m.layout)},
                               [dtype](const tensor_list& in) {
                                 return tensor_list{masked_fill(in[0], in[1], scalar_for(dtype, -0.5, 1))};
                               }));
    return samples;
  }));
  t.push_back(entry("strata::masked_fill.Tensor", kAllTypes, {0, 2}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const auto& [x, m] : inplace_binary_shapes())
      samples.push_back(sample(describe(x) + " mask " + describe(m),
                               {make_arg(x.sizes, dtype, x.layout), make_arg(m.sizes, kBool, m.layout), make_arg({}, dtype)},
                               [](const tensor_list& in) { return tensor_list{masked_fill(in[0], in[1], in[2])}; }));
    samples.push_back(sample("[3, 4] with a 0-d int64 value", {make_arg({3, 4}, dtype), make_arg({3, 4}, kBool), make_arg({}, kInt64)},
                             [](const tensor_list& in) { return tensor_list{masked_fill(in[0], in[1], in[2])}; }));
    samples.push_back(sample("int64 [3, 4] with a 0-d value", {make_arg({3, 4}, kInt64), make_arg({3, 4}, kBool), make_arg({}, dtype)},
                             [](const tensor_list& in) { return tensor_list{masked_fill(in[0], in[1], in[2])}; }));
    return samples;
  }));
  return t;
}

}  // namespace entries
}  // namespace strata::optable
