// Comparisons: the elementwise ops eq ne lt le gt ge (Tensor and Scalar overloads, kBool
// results), where and logical_not; and the whole-tensor equal and allclose, plain functions
// rather than ops (they return bool) that work on any dtypes and strides of CPU tensors.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/shapes/compare.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

void check_comparable(const char* op, const Tensor& a, const Tensor& b) {
  detail::check_same_device(op, a, b);
  STRATA_CHECK(!a.is_meta(), "[", op, "] cannot compare meta tensors: they have no data");
}

// Calls row(pointers, count, strides) over a and b (converted to T) broadcast to `sizes`.
template <class T, class RowFn>
void for_each_pair(const Tensor& a, const Tensor& b, IntArrayRef sizes, const RowFn& row) {
  const Tensor x = a.dtype() == scalar_type_of<T> ? a : detail::cast_to(a, scalar_type_of<T>);
  const Tensor y = b.dtype() == scalar_type_of<T> ? b : detail::cast_to(b, scalar_type_of<T>);
  const DimVector x_strides = detail::broadcast_strides(sizes, x), y_strides = detail::broadcast_strides(sizes, y);
  constexpr int64_t size = sizeof(T);
  const auto geometry = detail::make_geometry<2>(sizes, {x_strides.ref(), y_strides.ref()}, {size, size});
  if (geometry.numel == 0) return;
  detail::for_each_row<2>(geometry,
                          {static_cast<char*>(x.impl()->data()), static_cast<char*>(y.impl()->data())}, 0,
                          geometry.numel, row);
}

}  // namespace

bool equal(const Tensor& a, const Tensor& b) {
  check_comparable("equal", a, b);
  if (a.sizes() != b.sizes()) return false;
  bool same = true;
  visit_dtype(promote_types(a.dtype(), b.dtype()), [&]<class T>() {
    using C = compute_type_t<T>;
    for_each_pair<T>(a, b, a.sizes(), [&same](char* const* p, int64_t count, const int64_t* s) {
      for (int64_t i = 0; i < count && same; ++i) {
        const C x = static_cast<C>(*reinterpret_cast<const T*>(p[0] + i * s[0]));
        const C y = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
        same = x == y;
      }
    });
  });
  return same;
}

// |a - b| <= atol + rtol * |b| elementwise (broadcasting), computed in double; equal
// infinities are close, NaN is never close.
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  check_comparable("allclose", a, b);
  STRATA_CHECK_VALUE(rtol >= 0 && atol >= 0, "[allclose] rtol and atol must be non-negative, got rtol=", rtol,
                     " and atol=", atol);
  const DimVector sizes = broadcast_shapes(a.sizes(), b.sizes(), "allclose");
  bool close = true;
  for_each_pair<double>(a, b, sizes, [&](char* const* p, int64_t count, const int64_t* s) {
    for (int64_t i = 0; i < count && close; ++i) {
      const double x = *reinterpret_cast<const double*>(p[0] + i * s[0]);
      const double y = *reinterpret_cast<const double*>(p[1] + i * s[1]);
      close = x == y || (std::isfinite(y) && std::abs(x - y) <= atol + rtol * std::abs(y));
    }
  });
  return close;
}

// ---------------------------------------------------------------------------------------
// Elementwise comparisons (Note [Comparison dtypes] in shapes/compare.h; the shape functions
// live there and the Meta kernels derive from them). The comparisons have no derivative:
// their Autograd slot falls through to the backend.

namespace {

using shapes::Comparison, shapes::comparison_name;

template <Comparison kind>
struct CompareOp {
  template <class C>
  bool operator()(C x, C y) const {
    if constexpr (kind == Comparison::eq) return x == y;
    else if constexpr (kind == Comparison::ne) return x != y;
    else if constexpr (kind == Comparison::lt) return x < y;
    else if constexpr (kind == Comparison::le) return x <= y;
    else if constexpr (kind == Comparison::gt) return x > y;
    else return x >= y;
  }
};

// out[i] = fn(a[i]): out of type O, a of type T broadcast to out's shape.
template <class O, class T, class Fn>
void map_unary(const Tensor& out, const Tensor& a, const Fn& fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  O* o = detail::data_of<O>(out);
  const T* x = detail::data_of<T>(a);
  if (out.is_contiguous() && a.is_contiguous() && a.numel() == n) {
    detail::run_chunked(n, [o, x, &fn](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = fn(x[i]);
    });
    return;
  }
  const DimVector a_strides = detail::broadcast_strides(out.sizes(), a);
  const auto geometry = detail::make_geometry<2>(out.sizes(), {out.strides(), a_strides.ref()},
                                                 {int64_t{sizeof(O)}, int64_t{sizeof(T)}});
  detail::run_rows<2>(geometry, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(const_cast<T*>(x))},
                      [&fn](char* const* p, int64_t count, const int64_t* s) {
                        for (int64_t i = 0; i < count; ++i)
                          *reinterpret_cast<O*>(p[0] + i * s[0]) = fn(*reinterpret_cast<const T*>(p[1] + i * s[1]));
                      });
}

// out[i] = fn(a[i], b[i]): out of type O, a and b of type T broadcast to out's shape.
template <class O, class T, class Fn>
void map_binary(const Tensor& out, const Tensor& a, const Tensor& b, const Fn& fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  O* o = detail::data_of<O>(out);
  const T* x = detail::data_of<T>(a);
  const T* y = detail::data_of<T>(b);
  if (out.is_contiguous() && a.is_contiguous() && b.is_contiguous() && a.numel() == n && b.numel() == n) {
    detail::run_chunked(n, [o, x, y, &fn](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = fn(x[i], y[i]);
    });
    return;
  }
  const DimVector a_strides = detail::broadcast_strides(out.sizes(), a);
  const DimVector b_strides = detail::broadcast_strides(out.sizes(), b);
  const auto geometry = detail::make_geometry<3>(out.sizes(), {out.strides(), a_strides.ref(), b_strides.ref()},
                                                 {int64_t{sizeof(O)}, int64_t{sizeof(T)}, int64_t{sizeof(T)}});
  detail::run_rows<3>(geometry,
                      {reinterpret_cast<char*>(o), reinterpret_cast<char*>(const_cast<T*>(x)),
                       reinterpret_cast<char*>(const_cast<T*>(y))},
                      [&fn](char* const* p, int64_t count, const int64_t* s) {
                        for (int64_t i = 0; i < count; ++i)
                          *reinterpret_cast<O*>(p[0] + i * s[0]) = fn(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                                                                      *reinterpret_cast<const T*>(p[2] + i * s[2]));
                      });
}

Tensor converted(const Tensor& t, ScalarType dtype) { return t.dtype() == dtype ? t : detail::cast_to(t, dtype); }

// out = a (op) value, a converted to T.
template <Comparison kind>
void compare_with_value(const Tensor& out, const Tensor& a, const Scalar& value, ScalarType compute) {
  visit_dtype(compute, [&]<class T>() {
    using C = compute_type_t<T>;
    const C c = detail::checked_scalar<T>(value, comparison_name(kind));
    map_unary<bool, T>(out, converted(a, compute), [c](T x) { return CompareOp<kind>{}(static_cast<C>(x), c); });
  });
}

// CPU compute (Note [Structured ops]): out is a kBool tensor of the shape function's sizes. A
// one-element `other` is read once as a value; see compute_binary in pointwise.cpp.
template <Comparison kind>
void compare_out_cpu(const Tensor& out, const Tensor& self, const Tensor& other) {
  if (out.numel() == 0) return;
  const ScalarType compute = result_type(self, other);
  if (other.numel() == 1) {
    compare_with_value<kind>(out, self, detail::read_scalar(converted(other, compute)), compute);
    return;
  }
  visit_dtype(compute, [&]<class T>() {
    using C = compute_type_t<T>;
    map_binary<bool, T>(out, converted(self, compute), converted(other, compute),
                        [](T x, T y) { return CompareOp<kind>{}(static_cast<C>(x), static_cast<C>(y)); });
  });
}

template <Comparison kind>
void compare_scalar_out_cpu(const Tensor& out, const Tensor& self, const Scalar& other) {
  compare_with_value<kind>(out, self, other, result_type(self, other));
}

void logical_not_out_cpu(const Tensor& out, const Tensor& self) {
  visit_dtype(self.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    map_unary<bool, T>(out, self, [](T x) { return static_cast<C>(x) == C(0); });
  });
}

// ---------------------------------------------------------------------------------------
// where(condition, self, other): see shapes::where_self.

// o[i] = c[i] ? x[i] : y[i] for i in [begin, end) over contiguous operands; a *Single operand
// has one value. The condition is read as bytes (0 or 1): GCC 12 does not vectorise loads of
// bool. Both values are read, so the loop is a select without a branch. The pointers are
// arguments, not lambda captures, so the stores through o cannot change them.
template <class T, bool XSingle, bool YSingle>
void where_range(T* o, const unsigned char* flags, const T* x, const T* y, int64_t begin, int64_t end) {
  // A single value is read once: a store through o could alias it, which stops vectorising.
  const T x_single = XSingle ? x[0] : T(), y_single = YSingle ? y[0] : T();
  for (int64_t i = begin; i < end; ++i) {
    const T when_true = XSingle ? x_single : x[i], when_false = YSingle ? y_single : y[i];
    o[i] = flags[i] != 0 ? when_true : when_false;
  }
}

template <class T, bool XSingle, bool YSingle>
void where_flat(T* o, const bool* c, const T* x, const T* y, int64_t n) {
  const auto* flags = reinterpret_cast<const unsigned char*>(c);
  detail::run_chunked(
      n, [=](int64_t begin, int64_t end) { where_range<T, XSingle, YSingle>(o, flags, x, y, begin, end); });
}

template <class T>
void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  const int64_t n = out.numel();
  T* o = detail::data_of<T>(out);
  const bool* c = detail::data_of<bool>(condition);
  const T* x = detail::data_of<T>(a);
  const T* y = detail::data_of<T>(b);
  // Contiguous operands, either of the values possibly a single one (relu's backward is
  // where(result > 0, grad, 0)): flat loops the compiler vectorises.
  // A single value may come expanded to the output's shape (all strides 0).
  auto full = [n](const Tensor& t) { return t.numel() == n && t.is_contiguous(); };
  auto single = [](const Tensor& t) {
    return t.numel() == 1 || std::all_of(t.strides().begin(), t.strides().end(), [](int64_t s) { return s == 0; });
  };
  if (out.is_contiguous() && full(condition)) {
    if (full(a) && full(b)) return where_flat<T, false, false>(o, c, x, y, n);
    if (full(a) && single(b)) return where_flat<T, false, true>(o, c, x, y, n);
    if (single(a) && full(b)) return where_flat<T, true, false>(o, c, x, y, n);
  }
  const DimVector c_strides = detail::broadcast_strides(out.sizes(), condition);
  const DimVector a_strides = detail::broadcast_strides(out.sizes(), a);
  const DimVector b_strides = detail::broadcast_strides(out.sizes(), b);
  constexpr int64_t size = sizeof(T);
  const auto geometry = detail::make_geometry<4>(
      out.sizes(), {out.strides(), c_strides.ref(), a_strides.ref(), b_strides.ref()}, {size, 1, size, size});
  detail::run_rows<4>(geometry,
                      {reinterpret_cast<char*>(o), reinterpret_cast<char*>(const_cast<bool*>(c)),
                       reinterpret_cast<char*>(const_cast<T*>(x)), reinterpret_cast<char*>(const_cast<T*>(y))},
                      [](char* const* p, int64_t count, const int64_t* s) {
                        for (int64_t i = 0; i < count; ++i)
                          *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                                       ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                                       : *reinterpret_cast<const T*>(p[3] + i * s[3]);
                      });
}

void where_out_cpu(const Tensor& out, const Tensor& condition, const Tensor& self, const Tensor& other) {
  if (out.numel() == 0) return;
  visit_dtype(out.dtype(), [&]<class T>() {
    where_kernel<T>(out, condition, converted(self, out.dtype()), converted(other, out.dtype()));
  });
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured;
  def_structured<&shapes::eq_tensor>(m, "eq.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::eq_scalar>(m, "eq.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::ne_tensor>(m, "ne.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::ne_scalar>(m, "ne.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::lt_tensor>(m, "lt.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::lt_scalar>(m, "lt.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::le_tensor>(m, "le.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::le_scalar>(m, "le.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::gt_tensor>(m, "gt.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::gt_scalar>(m, "gt.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::ge_tensor>(m, "ge.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::ge_scalar>(m, "ge.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&shapes::logical_not>(m, "logical_not(Tensor self) -> Tensor");
  def_structured<&shapes::where_self>(m, "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("eq.Tensor", structured<&shapes::eq_tensor, &compare_out_cpu<Comparison::eq>>());
  m.impl("ne.Tensor", structured<&shapes::ne_tensor, &compare_out_cpu<Comparison::ne>>());
  m.impl("lt.Tensor", structured<&shapes::lt_tensor, &compare_out_cpu<Comparison::lt>>());
  m.impl("le.Tensor", structured<&shapes::le_tensor, &compare_out_cpu<Comparison::le>>());
  m.impl("gt.Tensor", structured<&shapes::gt_tensor, &compare_out_cpu<Comparison::gt>>());
  m.impl("ge.Tensor", structured<&shapes::ge_tensor, &compare_out_cpu<Comparison::ge>>());
  m.impl("eq.Scalar", structured<&shapes::eq_scalar, &compare_scalar_out_cpu<Comparison::eq>>());
  m.impl("ne.Scalar", structured<&shapes::ne_scalar, &compare_scalar_out_cpu<Comparison::ne>>());
  m.impl("lt.Scalar", structured<&shapes::lt_scalar, &compare_scalar_out_cpu<Comparison::lt>>());
  m.impl("le.Scalar", structured<&shapes::le_scalar, &compare_scalar_out_cpu<Comparison::le>>());
  m.impl("gt.Scalar", structured<&shapes::gt_scalar, &compare_scalar_out_cpu<Comparison::gt>>());
  m.impl("ge.Scalar", structured<&shapes::ge_scalar, &compare_scalar_out_cpu<Comparison::ge>>());
  m.impl("logical_not", structured<&shapes::logical_not, &logical_not_out_cpu>());
  m.impl("where.self", structured<&shapes::where_self, &where_out_cpu>());
}

// where's derivative: the gradient goes to self where the condition holds, to other elsewhere.
namespace {
using autograd::AutogradContext;

struct WhereFunction : autograd::Function<WhereFunction> {
  static constexpr std::string_view name() { return "WhereBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& condition, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({condition});
    return where(condition, self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor condition = autograd::detail::saved_tensors(*ctx)[0];
    const Tensor& g = grads[0];
    const Tensor zero = zeros({}, g.options());
    return autograd::detail::gradients_in(std::move(grads), Tensor(),
                                          ctx->needs_input_grad(1) ? where(condition, g, zero) : Tensor(),
                                          ctx->needs_input_grad(2) ? where(condition, zero, g) : Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) { m.impl("where.self", autograd::kernel<WhereFunction>()); }

using CompareHandle = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)>;
using CompareScalarHandle = TypedOperatorHandle<Tensor(const Tensor&, const Scalar&)>;
CompareHandle compare_handle(const char* name) { return find_op(name).typed<Tensor(const Tensor&, const Tensor&)>(); }
CompareScalarHandle compare_scalar_handle(const char* name) {
  return find_op(name).typed<Tensor(const Tensor&, const Scalar&)>();
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor eq(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::eq.Tensor");
  return op.call(self, other);
}
Tensor ne(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::ne.Tensor");
  return op.call(self, other);
}
Tensor lt(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::lt.Tensor");
  return op.call(self, other);
}
Tensor le(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::le.Tensor");
  return op.call(self, other);
}
Tensor gt(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::gt.Tensor");
  return op.call(self, other);
}
Tensor ge(const Tensor& self, const Tensor& other) {
  static const CompareHandle op = compare_handle("strata::ge.Tensor");
  return op.call(self, other);
}
Tensor eq(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::eq.Scalar");
  return op.call(self, other);
}
Tensor ne(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::ne.Scalar");
  return op.call(self, other);
}
Tensor lt(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::lt.Scalar");
  return op.call(self, other);
}
Tensor le(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::le.Scalar");
  return op.call(self, other);
}
Tensor gt(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::gt.Scalar");
  return op.call(self, other);
}
Tensor ge(const Tensor& self, const Scalar& other) {
  static const CompareScalarHandle op = compare_scalar_handle("strata::ge.Scalar");
  return op.call(self, other);
}

Tensor logical_not(const Tensor& self) {
  static const auto op = find_op("strata::logical_not").typed<Tensor(const Tensor&)>();
  return op.call(self);
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::where.self").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  return op.call(condition, self, other);
}

}  // namespace strata
