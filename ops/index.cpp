// Indexing: slice, select and narrow (views sharing storage and the version counter, with
// slice_backward / select_backward for their gradients), index_select and index_add,
// gather and scatter_add, masked_fill.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/op_helpers.h>
#include <strata/ops/shapes/index.h>
#include <strata/ops/structured.h>

#include <cstring>
#include <limits>

namespace strata {
namespace {

using detail::DimLayout;
using detail::layout_around;

// ---------------------------------------------------------------------------------------
// Views: slice and select. Metadata only, so one CompositeExplicitAutograd kernel each.

struct SliceBounds {
  int64_t dim, start, end, step;
};

// Note [Slice bounds]
// As in PyTorch (and Python), a missing start is 0 and a missing end is the dim's size;
// negative bounds count from the end; bounds still out of range are clamped, so
// slice(t, 0, -100, 100) is the whole dim and slice(t, 0, 5, 2) of a size-3 dim is empty.
SliceBounds slice_bounds(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                         int64_t step) {
  STRATA_CHECK_INDEX(self.dim() > 0, "[slice] cannot be applied to a 0-dim tensor");
  STRATA_CHECK_VALUE(step > 0, "[slice] step must be positive, got step=", step);
  const int64_t d = wrap_dim(dim, self.dim(), "slice");
  const int64_t size = self.sizes()[d];
  int64_t first = start.value_or(0), last = end.value_or(std::numeric_limits<int64_t>::max());
  if (first < 0) first += size;
  if (last < 0) last += size;
  first = std::clamp<int64_t>(first, 0, size);
  last = std::clamp<int64_t>(last, first, size);
  return {d, first, last, step};
}

Tensor slice_view(const Tensor& self, const SliceBounds& bounds) {
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t d = bounds.dim;
  const int64_t offset = self.storage_offset() + bounds.start * strides[d];
  // Neither forms end - start + step - 1 nor multiplies a stride that one element never uses: a
  // huge step (a valid call: one element) would overflow int64.
  sizes[d] = bounds.end > bounds.start ? (bounds.end - bounds.start - 1) / bounds.step + 1 : 0;
  if (sizes[d] > 1) strides[d] *= bounds.step;
  return detail::make_view(self, sizes, strides, offset);
}

Tensor slice_kernel(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                    int64_t step) {
  return slice_view(self, slice_bounds(self, dim, start, end, step));
}

Tensor select_kernel(const Tensor& self, int64_t dim, int64_t index) {
  STRATA_CHECK_INDEX(self.dim() > 0, "[select] cannot be applied to a 0-dim tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "select");
  const int64_t size = self.sizes()[d];
  STRATA_CHECK_INDEX(index >= -size && index < size, "[select] index ", index, " out of range for tensor of shape ",
                     self.sizes(), " at dimension ", d);
  const int64_t position = index < 0 ? index + size : index;
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t offset = self.storage_offset() + position * strides[d];
  sizes.erase(static_cast<size_t>(d));
  strides.erase(static_cast<size_t>(d));
  return detail::make_view(self, sizes, strides, offset);
}

// The gradients of slice and select: zeros of the input's shape with grad in the viewed part.
// Built from dispatched ops, so they serve every backend.
Tensor slice_backward_kernel(const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t start, int64_t end,
                             int64_t step) {
  Tensor result = zeros(input_sizes, grad.options());
  slice(result, dim, start, end, step).copy_(grad);
  return result;
}

Tensor select_backward_kernel(const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t index) {
  Tensor result = zeros(input_sizes, grad.options());
  select(result, dim, index).copy_(grad);
  return result;
}

// narrow is slice with a length, checked like PyTorch's (no clamping).
Tensor narrow_composite(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  STRATA_CHECK_INDEX(self.dim() > 0, "[narrow] cannot be applied to a 0-dim tensor");
  STRATA_CHECK_VALUE(length >= 0, "[narrow] length must be non-negative, got length=", length);
  const int64_t d = wrap_dim(dim, self.dim(), "narrow");
  const int64_t size = self.sizes()[d];
  STRATA_CHECK_INDEX(start >= -size && start <= size, "[narrow] start ", start, " out of range (expected to be in range "
                     "of [", -size, ", ", size, "]) for dimension ", d, " of the input of shape ", self.sizes());
  const int64_t first = start < 0 ? start + size : start;
  STRATA_CHECK_VALUE(first <= size - length, "[narrow] start (", first, ") + length (", length,
                     ") exceeds the size (", size, ") of dimension ", d, " of the input of shape ", self.sizes());
  return slice(self, d, first, first + length, 1);
}

// ---------------------------------------------------------------------------------------
// Index tensors.

// Calls fn(const I* indices) with the contiguous values of an int32 or int64 index tensor.
template <class Fn>
void with_indices(const Tensor& index, Fn&& fn) {
  const Tensor values = detail::as_contiguous(index);
  if (values.dtype() == kInt32) fn(detail::data_of<int32_t>(values));
  else fn(detail::data_of<int64_t>(values));
}

template <class I>
void check_index_values(const char* op, const I* indices, int64_t count, int64_t dim, int64_t size) {
  for (int64_t i = 0; i < count; ++i)
    STRATA_CHECK_INDEX(indices[i] >= 0 && indices[i] < size, "[", op, "] index ", static_cast<int64_t>(indices[i]),
                       " is out of bounds for dimension ", dim, " with size ", size);
}

// ---------------------------------------------------------------------------------------
// index_select and index_add.

// Copies whole rows of `inner` elements (memcpy, so every dtype is the same code) into a
// contiguous out that does not share self's storage; any other out (index_select.out) gets a
// contiguous result copied in.
void index_select_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  if (!out.is_contiguous() || out.impl()->storage() == self.impl()->storage()) {
    const Tensor result = detail::make_empty(out.sizes(), out.dtype(), out.device());
    index_select_out_cpu(result, self, dim, index);
    detail::copy_kernel(out, result);
    return;
  }
  const int64_t d = wrap_dim(dim, self.dim(), "index_select");
  const DimLayout layout = layout_around(self.sizes(), d);
  const int64_t count = index.numel();
  with_indices(index, [&]<class I>(const I* indices) {
    check_index_values("index_select", indices, count, d, layout.size);
    if (out.numel() == 0) return;
    const Tensor input = detail::as_contiguous(self);
    const int64_t row_bytes = layout.inner * self.element_size();
    const char* source = static_cast<const char*>(input.impl()->data());
    char* target = static_cast<char*>(out.impl()->data());
    auto copy_rows = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t outer = row / count, i = row % count;
        std::memcpy(target + row * row_bytes, source + (outer * layout.size + indices[i]) * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
    };
    const int64_t rows = layout.outer * count;
    if (out.numel() <= kDefaultGrainSize) copy_rows(0, rows);
    else parallel_for(0, rows, std::max<int64_t>(1, kDefaultGrainSize / layout.inner), copy_rows);
  });
}

// out = self; out[..., index[i], ...] += alpha * source[..., i, ...], duplicates accumulating.
// Threads split the outer rows and the inner columns, never the indices, so no two threads
// add into the same element. out is fresh and contiguous (no in-place or out= variant).
void index_add_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       const Scalar& alpha) {
  const int64_t d = wrap_dim(dim, self.dim(), "index_add");
  detail::copy_kernel(out, self);
  const DimLayout layout = layout_around(self.sizes(), d);
  const int64_t count = index.numel();
  visit_dtype(out.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    const C scale = detail::checked_scalar<T>(alpha, "index_add");
    with_indices(index, [&]<class I>(const I* indices) {
      check_index_values("index_add", indices, count, d, layout.size);
      if (source.numel() == 0) return;
      const Tensor input = detail::as_contiguous(source);
      const T* src = detail::data_of<T>(input);
      T* dst = detail::data_of<T>(out);
      constexpr int64_t kColumns = 256;
      const int64_t column_blocks = (layout.inner + kColumns - 1) / kColumns;
      auto add_block = [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t outer = task / column_blocks, first = task % column_blocks * kColumns;
          const int64_t last = std::min(first + kColumns, layout.inner);
          for (int64_t i = 0; i < count; ++i) {
            T* row = dst + (outer * layout.size + indices[i]) * layout.inner;
            const T* from = src + (outer * count + i) * layout.inner;
            for (int64_t k = first; k < last; ++k)
              row[k] = static_cast<T>(detail::wrapping_add(static_cast<C>(row[k]),
                                                           detail::wrapping_mul(scale, static_cast<C>(from[k]))));
          }
        }
      };
      const int64_t tasks = layout.outer * column_blocks;
      const int64_t work_per_task = count * std::min(kColumns, layout.inner);
      if (tasks * work_per_task <= kDefaultGrainSize) add_block(0, tasks);
      else parallel_for(0, tasks, std::max<int64_t>(1, kDefaultGrainSize / work_per_task), add_block);
    });
  });
}

// ---------------------------------------------------------------------------------------
// gather and scatter_add.

// Note [Gather geometry]
// gather and scatter_add walk every position p of `index` (0-d tensors act as shape [1]).
// The element of self they touch is p with its coordinate along dim replaced by index[p];
// the other operand (gather's output, scatter_add's src) is read or written at p itself.
// index may be smaller than self outside dim, and smaller than src everywhere.
struct GatherWalk {
  DimVector sizes;            // index's shape, at least 1-d
  DimVector self_strides;     // 0 along dim: the index value supplies that coordinate
  DimVector index_strides;
  DimVector other_strides;
  int64_t dim_stride = 0;     // self's stride along dim
  int64_t dim_size = 1;       // self's size along dim
};

DimVector nonempty(IntArrayRef values, int64_t fill) { return values.empty() ? DimVector{fill} : DimVector(values); }

GatherWalk gather_walk(const Tensor& self, int64_t d, const Tensor& index, const Tensor& other) {
  GatherWalk walk{nonempty(index.sizes(), 1), nonempty(self.strides(), 1), nonempty(index.strides(), 1),
                  nonempty(other.strides(), 1)};
  walk.dim_stride = walk.self_strides[d];
  walk.dim_size = self.dim() == 0 ? 1 : self.sizes()[d];
  walk.self_strides[d] = 0;
  return walk;
}

// Calls fn(self_offset, index_offset, other_offset) for positions [begin, end) of the walk, in
// order, a row of the innermost dim at a time (the outer coordinates move once per row).
template <class Fn>
void for_each_position(const GatherWalk& walk, int64_t begin, int64_t end, const Fn& fn) {
  const size_t ndim = walk.sizes.size(), last = ndim - 1;
  DimVector coords(ndim, 0);
  int64_t remainder = begin, self_offset = 0, index_offset = 0, other_offset = 0;
  for (size_t k = ndim; k-- > 0;) {
    coords[k] = remainder % walk.sizes[k];
    remainder /= walk.sizes[k];
    self_offset += coords[k] * walk.self_strides[k];
    index_offset += coords[k] * walk.index_strides[k];
    other_offset += coords[k] * walk.other_strides[k];
  }
  const int64_t inner = walk.sizes[last], self_step = walk.self_strides[last], index_step = walk.index_strides[last],
                other_step = walk.other_strides[last];
  for (int64_t p = begin; p < end;) {
    const int64_t count = std::min(inner - coords[last], end - p);
    for (int64_t j = 0; j < count; ++j) fn(self_offset + j * self_step, index_offset + j * index_step, other_offset + j * other_step);
    p += count;
    if (p == end) break;
    // Back to the start of the row, then carry into the outer dims.
    self_offset -= coords[last] * self_step;
    index_offset -= coords[last] * index_step;
    other_offset -= coords[last] * other_step;
    coords[last] = 0;
    for (size_t k = last; k-- > 0;) {
      self_offset += walk.self_strides[k];
      index_offset += walk.index_strides[k];
      other_offset += walk.other_strides[k];
      if (++coords[k] < walk.sizes[k]) break;
      self_offset -= walk.sizes[k] * walk.self_strides[k];
      index_offset -= walk.sizes[k] * walk.index_strides[k];
      other_offset -= walk.sizes[k] * walk.other_strides[k];
      coords[k] = 0;
    }
  }
}

int64_t checked_position(const char* op, int64_t value, const GatherWalk& walk, int64_t dim) {
  STRATA_CHECK_INDEX(value >= 0 && value < walk.dim_size, "[", op, "] index ", value,
                     " is out of bounds for dimension ", dim, " with size ", walk.dim_size);
  return value;
}

// The index values are checked here, as each position is read (shapes::gather checked the rest).
void gather_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  (void)sparse_grad;  // gradients are always dense here
  if (out.numel() == 0) return;
  const int64_t d = wrap_dim(dim, self.dim(), "gather");
  const GatherWalk walk = gather_walk(self, d, index, out);
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* input = detail::data_of<T>(self);
    const int64_t* indices = detail::data_of<int64_t>(index);
    T* output = detail::data_of<T>(out);
    const int64_t dim_stride = walk.dim_stride, dim_size = walk.dim_size;
    auto body = [&](int64_t begin, int64_t end) {
      for_each_position(walk, begin, end, [=, &walk](int64_t self_offset, int64_t index_offset, int64_t out_offset) {
        const int64_t position = indices[index_offset];
        if (static_cast<uint64_t>(position) >= static_cast<uint64_t>(dim_size)) [[unlikely]]
          checked_position("gather", position, walk, d);  // throws
        output[out_offset] = input[self_offset + position * dim_stride];
      });
    };
    detail::run_chunked(out.numel(), body);
  });
}

// Serial: positions that differ only along dim may add into the same element.
void scatter_add_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = wrap_dim(dim, self.dim(), "scatter_add");
  detail::copy_kernel(out, self);
  if (index.numel() == 0) return;
  const GatherWalk walk = gather_walk(out, d, index, src);
  visit_dtype(self.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    T* output = detail::data_of<T>(out);
    const int64_t* indices = detail::data_of<int64_t>(index);
    const T* source = detail::data_of<T>(src);
    for_each_position(walk, 0, index.numel(), [&](int64_t out_offset, int64_t index_offset, int64_t src_offset) {
      T& target = output[out_offset + checked_position("scatter_add", indices[index_offset], walk, d) * walk.dim_stride];
      target = static_cast<T>(detail::wrapping_add(static_cast<C>(target), static_cast<C>(source[src_offset])));
    });
  });
}

// ---------------------------------------------------------------------------------------
// masked_fill: self and mask broadcast together; the value converts to self's dtype.

void masked_fill_compute(const Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value) {
  detail::copy_kernel(out, self);
  if (out.numel() == 0) return;
  const DimVector mask_strides = detail::broadcast_strides(out.sizes(), mask);
  visit_dtype(out.dtype(), [&]<class T>() {
    const T fill = static_cast<T>(detail::checked_scalar<T>(value, "masked_fill"));
    const auto geometry = detail::make_geometry<2>(out.sizes(), {out.strides(), mask_strides.ref()},
                                                   {static_cast<int64_t>(sizeof(T)), 1});
    detail::run_rows<2>(geometry, {static_cast<char*>(out.impl()->data()), static_cast<char*>(mask.impl()->data())},
                        [fill](char* const* p, int64_t count, const int64_t* s) {
                          for (int64_t i = 0; i < count; ++i)
                            if (*reinterpret_cast<const bool*>(p[1] + i * s[1]))
                              *reinterpret_cast<T*>(p[0] + i * s[0]) = fill;
                        });
  });
}

void masked_fill_scalar_out_cpu(const Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value) {
  masked_fill_compute(out, self, mask, value);
}
void masked_fill_tensor_out_cpu(const Tensor& out, const Tensor& self, const Tensor& mask, const Tensor& value) {
  masked_fill_compute(out, self, mask, detail::read_scalar(value));
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_out;
  m.def("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)");
  m.def("slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, SymInt end, SymInt step) "
        "-> Tensor");
  m.def("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)");
  m.def("select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor");
  m.def("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", &narrow_composite);
  def_structured<&shapes::index_select>(m, "index_select(Tensor self, int dim, Tensor index) -> Tensor");
  def_structured_out<&shapes::index_select, "index_select.out">(
      m, "index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured<&shapes::index_add>(
      m, "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor");
  def_structured<&shapes::gather>(m, "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor");
  def_structured<&shapes::scatter_add>(m, "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  def_structured<&shapes::masked_fill_scalar>(m, "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor");
  def_structured<&shapes::masked_fill_tensor>(m, "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("slice.Tensor", &slice_kernel);
  m.impl("slice_backward", &slice_backward_kernel);
  m.impl("select.int", &select_kernel);
  m.impl("select_backward", &select_backward_kernel);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_out;
  m.impl("index_select", structured<&shapes::index_select, &index_select_out_cpu>());
  m.impl("index_select.out", structured_out<&shapes::index_select, &index_select_out_cpu, "index_select.out">());
  m.impl("index_add", structured<&shapes::index_add, &index_add_out_cpu>());
  m.impl("gather", structured<&shapes::gather, &gather_out_cpu>());
  m.impl("scatter_add", structured<&shapes::scatter_add, &scatter_add_out_cpu>());
  m.impl("masked_fill.Scalar", structured<&shapes::masked_fill_scalar, &masked_fill_scalar_out_cpu>());
  m.impl("masked_fill.Tensor", structured<&shapes::masked_fill_tensor, &masked_fill_tensor_out_cpu>());
}

// ---------------------------------------------------------------------------------------
// Derivatives. Each backward is written in differentiable ops (slice_backward and
// select_backward have their own Functions), so double backward works through them.

namespace {
using autograd::AutogradContext;

struct SliceFunction : autograd::Function<SliceFunction> {
  static constexpr std::string_view name() { return "SliceBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, std::optional<int64_t> start,
                        std::optional<int64_t> end, int64_t step) {
    const SliceBounds bounds = slice_bounds(self, dim, start, end, step);
    ctx->saved_data["bounds"] = std::vector<int64_t>{bounds.dim, bounds.start, bounds.end, bounds.step};
    return slice(self, dim, start, end, step);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const std::vector<int64_t> b = ctx->saved_data["bounds"].to_int_list();
    return autograd::detail::gradients_in(std::move(grads),
                                          slice_backward(grads[0], ctx->input_sizes(0), b[0], b[1], b[2], b[3]),
                                          Tensor(), Tensor(), Tensor(), Tensor());
  }
};

struct SliceBackwardFunction : autograd::Function<SliceBackwardFunction> {
  static constexpr std::string_view name() { return "SliceBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t start,
                        int64_t end, int64_t step) {
    ctx->saved_data["bounds"] = std::vector<int64_t>{dim, start, end, step};
    return slice_backward(grad, input_sizes, dim, start, end, step);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const std::vector<int64_t> b = ctx->saved_data["bounds"].to_int_list();
    return autograd::detail::gradients_in(std::move(grads), slice(grads[0], b[0], b[1], b[2], b[3]), Tensor(), Tensor(),
                                          Tensor(), Tensor(), Tensor());
  }
};

struct SelectFunction : autograd::Function<SelectFunction> {
  static constexpr std::string_view name() { return "SelectBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, int64_t index) {
    Tensor out = select(self, dim, index);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["index"] = index;
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads),
        select_backward(grads[0], ctx->input_sizes(0), ctx->saved_data["dim"].to_int(),
                        ctx->saved_data["index"].to_int()),
        Tensor(), Tensor());
  }
};

struct SelectBackwardFunction : autograd::Function<SelectBackwardFunction> {
  static constexpr std::string_view name() { return "SelectBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t index) {
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["index"] = index;
    return select_backward(grad, input_sizes, dim, index);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads), select(grads[0], ctx->saved_data["dim"].to_int(), ctx->saved_data["index"].to_int()),
        Tensor(), Tensor(), Tensor());
  }
};

// d(index_select)/d(self) scatters the gradient back with index_add; duplicates accumulate.
struct IndexSelectFunction : autograd::Function<IndexSelectFunction> {
  static constexpr std::string_view name() { return "IndexSelectBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, const Tensor& index) {
    ctx->save_for_backward({index});
    ctx->saved_data["dim"] = dim;
    return index_select(self, dim, index);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor index = autograd::detail::saved_tensors(*ctx)[0];
    const Tensor base = zeros(ctx->input_sizes(0), grads[0].options());
    return autograd::detail::gradients_in(
        std::move(grads), index_add(base, ctx->saved_data["dim"].to_int(), index, grads[0]), Tensor(), Tensor());
  }
};

struct IndexAddFunction : autograd::Function<IndexAddFunction> {
  static constexpr std::string_view name() { return "IndexAddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& source, const Scalar& alpha) {
    ctx->save_for_backward({index});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["alpha"] = alpha;
    return index_add(self, dim, index, source, alpha);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor grad_source;
    if (ctx->needs_input_grad(3)) {
      grad_source = index_select(grads[0], ctx->saved_data["dim"].to_int(), autograd::detail::saved_tensors(*ctx)[0]);
      const Scalar alpha = ctx->saved_data["alpha"].to_scalar();
      if (alpha.to_double() != 1.0) grad_source = grad_source * alpha;
    }
    return autograd::detail::gradients_in(std::move(grads), grads[0], Tensor(), Tensor(), grad_source, Tensor());
  }
};

struct GatherFunction : autograd::Function<GatherFunction> {
  static constexpr std::string_view name() { return "GatherBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
    ctx->save_for_backward({index});
    ctx->saved_data["dim"] = dim;
    return gather(self, dim, index, sparse_grad);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor base = zeros(ctx->input_sizes(0), grads[0].options());
    return autograd::detail::gradients_in(
        std::move(grads),
        scatter_add(base, ctx->saved_data["dim"].to_int(), autograd::detail::saved_tensors(*ctx)[0], grads[0]),
        Tensor(), Tensor(), Tensor());
  }
};

// src's gradient is gathered at index, then padded with zeros where src is larger than index.
struct ScatterAddFunction : autograd::Function<ScatterAddFunction> {
  static constexpr std::string_view name() { return "ScatterAddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
    ctx->save_for_backward({index});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["src_sizes"] = src.sizes();
    return scatter_add(self, dim, index, src);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor grad_src;
    if (ctx->needs_input_grad(3)) {
      grad_src = gather(grads[0], ctx->saved_data["dim"].to_int(), autograd::detail::saved_tensors(*ctx)[0]);
      const std::vector<int64_t> src_sizes = ctx->saved_data["src_sizes"].to_int_list();
      std::vector<int64_t> padded = grad_src.sizes().vec();
      for (size_t k = 0; k < padded.size() && grad_src.dim() > 0; ++k) {
        if (padded[k] == src_sizes[k]) continue;
        const int64_t length = padded[k];
        padded[k] = src_sizes[k];
        grad_src = slice_backward(grad_src, padded, static_cast<int64_t>(k), 0, length, 1);
      }
    }
    return autograd::detail::gradients_in(std::move(grads), grads[0], Tensor(), Tensor(), grad_src);
  }
};

struct MaskedFillScalarFunction : autograd::Function<MaskedFillScalarFunction> {
  static constexpr std::string_view name() { return "MaskedFillBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& mask, const Scalar& value) {
    ctx->save_for_backward({mask});
    return masked_fill(self, mask, value);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads), masked_fill(grads[0], autograd::detail::saved_tensors(*ctx)[0], 0), Tensor(), Tensor());
  }
};

// The value's gradient is the sum of the gradient over the filled positions. An integral self
// gives an integral result, which carries no gradient (as in PyTorch) even for a floating
// value that requires grad.
struct MaskedFillTensorFunction : autograd::Function<MaskedFillTensorFunction> {
  static constexpr std::string_view name() { return "MaskedFillBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& mask, const Tensor& value) {
    ctx->save_for_backward({mask});
    Tensor out = masked_fill(self, mask, value);
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor kept = masked_fill(grads[0], autograd::detail::saved_tensors(*ctx)[0], 0);
    return autograd::detail::gradients_in(std::move(grads), kept, Tensor(),
                                          ctx->needs_input_grad(2) ? sum(grads[0] - kept) : Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("slice.Tensor", autograd::kernel<SliceFunction>());
  m.impl("slice_backward", autograd::kernel<SliceBackwardFunction>());
  m.impl("select.int", autograd::kernel<SelectFunction>());
  m.impl("select_backward", autograd::kernel<SelectBackwardFunction>());
  m.impl("index_select", autograd::kernel<IndexSelectFunction>());
  m.impl("index_add", autograd::kernel<IndexAddFunction>());
  m.impl("gather", autograd::kernel<GatherFunction>());
  m.impl("scatter_add", autograd::kernel<ScatterAddFunction>());
  m.impl("masked_fill.Scalar", autograd::kernel<MaskedFillScalarFunction>());
  m.impl("masked_fill.Tensor", autograd::kernel<MaskedFillTensorFunction>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  static const auto op = find_op("strata::slice.Tensor")
                             .typed<Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t)>();
  return op.call(self, dim, start, end, step);
}
Tensor slice_backward(const Tensor& grad_output, IntArrayRef input_sizes, int64_t dim, int64_t start, int64_t end,
                      int64_t step) {
  static const auto op = find_op("strata::slice_backward")
                             .typed<Tensor(const Tensor&, IntArrayRef, int64_t, int64_t, int64_t, int64_t)>();
  return op.call(grad_output, input_sizes, dim, start, end, step);
}
Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  static const auto op = find_op("strata::select.int").typed<Tensor(const Tensor&, int64_t, int64_t)>();
  return op.call(self, dim, index);
}
Tensor select_backward(const Tensor& grad_output, IntArrayRef input_sizes, int64_t dim, int64_t index) {
  static const auto op =
      find_op("strata::select_backward").typed<Tensor(const Tensor&, IntArrayRef, int64_t, int64_t)>();
  return op.call(grad_output, input_sizes, dim, index);
}
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  static const auto op = find_op("strata::narrow").typed<Tensor(const Tensor&, int64_t, int64_t, int64_t)>();
  return op.call(self, dim, start, length);
}
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  static const auto op = find_op("strata::index_select").typed<Tensor(const Tensor&, int64_t, const Tensor&)>();
  return op.call(self, dim, index);
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  static const auto op = find_op("strata::index_add")
                             .typed<Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&)>();
  return op.call(self, dim, index, source, alpha);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  static const auto op = find_op("strata::gather").typed<Tensor(const Tensor&, int64_t, const Tensor&, bool)>();
  return op.call(self, dim, index, sparse_grad);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  static const auto op =
      find_op("strata::scatter_add").typed<Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&)>();
  return op.call(self, dim, index, src);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  static const auto op = find_op("strata::masked_fill.Scalar").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  return op.call(self, mask, value);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  static const auto op = find_op("strata::masked_fill.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  return op.call(self, mask, value);
}

// out= variant (LibTorch's at::index_select_out order: out first).
const Tensor& index_select_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  static const auto op =
      find_op("strata::index_select.out").typed<Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&)>();
  op.call(self, dim, index, out);
  return out;
}

}  // namespace strata
