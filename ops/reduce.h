#pragma once
// Internal to ops/ (not public API): the CPU input layout shared by the reduction families
// (reduce.cpp, reduce_minmax.cpp, reduce_stats.cpp), and the column loop that folds any
// reduction over that layout. See Note [Reduction layout]. Their shape functions are in
// ops/shapes/reduce.h.
#include <algorithm>
#include <optional>

#include <strata/ops/elementwise.h>
#include <strata/ops/shapes/reduce.h>

namespace strata::detail {

using shapes::ReduceShape;
using shapes::reduce_shape;
using shapes::check_nonempty_reduction;

// The tensor a CPU compute function fills: `out` itself when it is contiguous and shares no
// storage with `input`, else a fresh contiguous tensor that finish_output copies into `out`
// (an out= tensor may be strided, or be the input; see Note [Structured ops]).
inline Tensor writable_output(const Tensor& out, const Tensor& input) {
  if (out.is_contiguous() && out.impl()->storage() != input.impl()->storage()) return out;
  return make_empty(out.sizes(), out.dtype(), out.device());
}
inline void finish_output(const Tensor& out, const Tensor& written) {
  if (!written.is_same(out)) copy_kernel(out, written);
}

// Note [Reduction layout]
// A reduction reads its input as a contiguous [outer, reduced, inner] block and writes the
// output as [outer, inner]: each output element folds `reduced` values spaced `inner` apart.
// A contiguous input whose reduced dims (size-1 dims ignored) form one run is read in place,
// and so is a dense input in another order of dims that is such a block in memory order (see
// reduce_input); any other input is copied once with its kept dims first. Either way the fold visits the
// reduced elements in row-major order of the reduced dims, so a position r in the fold is
// the flat index an argmax over several dims reports.
struct ReduceLayout {
  int64_t outer = 1, reduced = 1, inner = 1;
};

// Whether the fold must visit the reduced elements in row-major order of the reduced dims
// (argmax reports positions) or may take them in memory order (sums, products, moments).
enum class FoldOrder { row_major, any };

// The input to fold (self, or a contiguous copy) and its layout. A dense input in another order
// of dims (channels last, transposed) is read in place, in memory order, when its kept dims
// keep their order there (and, for FoldOrder::row_major, its reduced dims too): the global
// average pool of a channels-last activation reads it without a copy.
Tensor reduce_input(const Tensor& self, const ReduceShape& shape, ReduceLayout& layout,
                    FoldOrder order = FoldOrder::row_major);

// Folds every output element of the layout with `reducer`, which provides:
//   using Acc = ...;                               the running state of one output element
//   Acc init() const;
//   void fold(Acc& acc, C value, int64_t r) const;  r: position along the reduced extent
//   void store(int64_t output_index, const Acc& acc) const;
// and may provide a faster fold of one contiguous run of positions 0..n-1 (used when inner is
// 1), with the result of folding its values one by one:
//   Acc fold_row(const T* row, int64_t n) const;
// and a faster fold of a block of `width` neighbouring outputs (inner > 1), storing them from
// output index `first` on, each with the result of folding its column value by value:
//   void fold_columns(const T* block, int64_t reduced, int64_t stride, int64_t width, int64_t first) const;
// Outputs are processed in columns of up to kFoldWidth neighbours (inner > 1), so the loop
// over one reduced row runs along contiguous memory; tasks are spread with parallel_for.
inline constexpr int64_t kFoldWidth = 64;

// A run folded one value at a time: what a reducer's fold_row falls back to for the dtypes or
// cases its faster path does not take.
template <class T, class Reducer>
typename Reducer::Acc fold_each(const Reducer& reducer, const T* row, int64_t n) {
  typename Reducer::Acc acc = reducer.init();
  for (int64_t i = 0; i < n; ++i) reducer.fold(acc, static_cast<compute_type_t<T>>(row[i]), i);
  return acc;
}

// fold_layout's loop for inner == 1 with a reducer's fold_row, kept out of line so that the
// column loop compiles as it does without it (Note [Loops kept out of line], ops/elementwise.h).
template <class T, class Reducer>
[[gnu::noinline]] void fold_rows(const T* x, const ReduceLayout& layout, const Reducer& reducer) {
  const int64_t reduced = layout.reduced;
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) reducer.store(o, reducer.fold_row(x + o * reduced, reduced));
  };
  const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / std::max<int64_t>(reduced, 1));
  if (layout.outer <= grain) rows(0, layout.outer);
  else parallel_for(0, layout.outer, grain, rows);
}

template <class T, class Reducer>
void fold_layout(const T* x, const ReduceLayout& layout, const Reducer& reducer) {
  using C = compute_type_t<T>;
  using Acc = typename Reducer::Acc;
  const int64_t reduced = layout.reduced, inner = layout.inner;
  const int64_t blocks = (inner + kFoldWidth - 1) / kFoldWidth;
  const int64_t work_per_task = std::max<int64_t>(1, reduced * std::min(inner, kFoldWidth));
  if constexpr (requires { reducer.fold_row(x, reduced); }) {
    if (inner == 1) return fold_rows(x, layout, reducer);
  }
  auto run = [&](int64_t begin, int64_t end) {
    Acc accumulators[kFoldWidth];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks, column = task % blocks * kFoldWidth;
      const int64_t width = std::min(kFoldWidth, inner - column);
      const T* base = x + o * reduced * inner + column;
      if constexpr (requires { reducer.fold_columns(base, reduced, inner, width, o); }) {
        reducer.fold_columns(base, reduced, inner, width, o * inner + column);
        continue;
      }
      for (int64_t j = 0; j < width; ++j) accumulators[j] = reducer.init();
      for (int64_t r = 0; r < reduced; ++r) {
        const T* row = base + r * inner;
        for (int64_t j = 0; j < width; ++j) reducer.fold(accumulators[j], static_cast<C>(row[j]), r);
      }
      for (int64_t j = 0; j < width; ++j) reducer.store(o * inner + column + j, accumulators[j]);
    }
  };
  const int64_t tasks = layout.outer * blocks;
  const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / work_per_task);
  if (tasks <= grain) run(0, tasks);
  else parallel_for(0, tasks, grain, [&run](int64_t begin, int64_t end) { run(begin, end); });
}

}  // namespace strata::detail
