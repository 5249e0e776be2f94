// Comparisons: the elementwise ops eq ne lt le gt ge (Tensor and Scalar overloads, kBool
// results), where and logical_not; and the whole-tensor equal and allclose, plain functions
// rather than ops (they return bool) that work on any dtypes and strides of CPU tensors.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>

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
// Elementwise comparisons. Note [Comparison dtypes]
// Both operands are converted to torch.result_type of the pair (int32 < 2.5 compares in
// float32) and the result is kBool; a Scalar operand converts with overflow checks like
// every Scalar argument (Note [Checked scalar conversion]). float16/bfloat16 compare in float.
// The comparisons have no derivative: their Autograd slot falls through to the backend.

namespace {

enum class Comparison { eq, ne, lt, le, gt, ge };

constexpr const char* comparison_name(Comparison kind) {
  switch (kind) {
    case Comparison::eq: return "eq";
    case Comparison::ne: return "ne";
    case Comparison::lt: return "lt";
    case Comparison::le: return "le";
    case Comparison::gt: return "gt";
    case Comparison::ge: return "ge";
  }
  return "?";
}

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

struct CompareShape {
  DimVector sizes;
  ScalarType compute;  // the operands are compared in this dtype
};

CompareShape compare_shape(const char* op, const Tensor& self, const Tensor& other) {
  detail::check_same_device(op, self, other);
  return {broadcast_shapes(self.sizes(), other.sizes(), op), result_type(self, other)};
}

CompareShape compare_scalar_shape(const char* op, const Tensor& self, const Scalar& other) {
  const ScalarType compute = result_type(self, other);
  visit_dtype(compute, [&]<class T>() { (void)detail::checked_scalar<T>(other, op); });
  return {DimVector(self.sizes()), compute};
}

// out = a (op) value, a converted to T.
template <Comparison kind>
void compare_with_value(const Tensor& out, const Tensor& a, const Scalar& value, ScalarType compute) {
  visit_dtype(compute, [&]<class T>() {
    using C = compute_type_t<T>;
    const C c = detail::checked_scalar<T>(value, comparison_name(kind));
    map_unary<bool, T>(out, converted(a, compute), [c](T x) { return CompareOp<kind>{}(static_cast<C>(x), c); });
  });
}

// A one-element `other` is read once as a value; see compute_binary in pointwise.cpp.
template <Comparison kind>
Tensor compare_cpu(const Tensor& self, const Tensor& other) {
  const CompareShape shape = compare_shape(comparison_name(kind), self, other);
  Tensor out = detail::make_empty(shape.sizes, kBool, self.device());
  if (out.numel() == 0) return out;
  if (other.numel() == 1) {
    compare_with_value<kind>(out, self, detail::read_scalar(converted(other, shape.compute)), shape.compute);
    return out;
  }
  visit_dtype(shape.compute, [&]<class T>() {
    using C = compute_type_t<T>;
    map_binary<bool, T>(out, converted(self, shape.compute), converted(other, shape.compute),
                        [](T x, T y) { return CompareOp<kind>{}(static_cast<C>(x), static_cast<C>(y)); });
  });
  return out;
}

template <Comparison kind>
Tensor compare_meta(const Tensor& self, const Tensor& other) {
  return detail::make_empty(compare_shape(comparison_name(kind), self, other).sizes, kBool, self.device());
}

template <Comparison kind>
Tensor compare_scalar_cpu(const Tensor& self, const Scalar& other) {
  const CompareShape shape = compare_scalar_shape(comparison_name(kind), self, other);
  Tensor out = detail::make_empty(shape.sizes, kBool, self.device());
  compare_with_value<kind>(out, self, other, shape.compute);
  return out;
}

template <Comparison kind>
Tensor compare_scalar_meta(const Tensor& self, const Scalar& other) {
  return detail::make_empty(compare_scalar_shape(comparison_name(kind), self, other).sizes, kBool, self.device());
}

Tensor logical_not_cpu(const Tensor& self) {
  Tensor out = detail::make_empty(self.sizes(), kBool, self.device());
  visit_dtype(self.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    map_unary<bool, T>(out, self, [](T x) { return static_cast<C>(x) == C(0); });
  });
  return out;
}

Tensor logical_not_meta(const Tensor& self) { return detail::make_empty(self.sizes(), kBool, self.device()); }

// ---------------------------------------------------------------------------------------
// where(condition, self, other): condition is kBool; the result has result_type(self, other)
// and the broadcast shape of all three.

struct WhereShape {
  DimVector sizes;
  ScalarType dtype;
};

WhereShape where_shape(const Tensor& condition, const Tensor& self, const Tensor& other) {
  detail::check_same_device("where", condition, self);
  detail::check_same_device("where", self, other);
  STRATA_CHECK_TYPE(condition.dtype() == kBool, "[where] expected condition to be a Bool tensor, got ",
                    condition.dtype());
  const DimVector values = broadcast_shapes(self.sizes(), other.sizes(), "where");
  return {broadcast_shapes(condition.sizes(), values, "where"), result_type(self, other)};
}

template <class T>
void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  const int64_t n = out.numel();
  T* o = detail::data_of<T>(out);
  const bool* c = detail::data_of<bool>(condition);
  const T* x = detail::data_of<T>(a);
  const T* y = detail::data_of<T>(b);
  if (out.is_contiguous() && condition.is_contiguous() && a.is_contiguous() && b.is_contiguous() &&
      condition.numel() == n && a.numel() == n && b.numel() == n) {
    detail::run_chunked(n, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = c[i] ? x[i] : y[i];
    });
    return;
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

Tensor where_cpu(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const WhereShape shape = where_shape(condition, self, other);
  Tensor out = detail::make_empty(shape.sizes, shape.dtype, self.device());
  if (out.numel() == 0) return out;
  visit_dtype(shape.dtype, [&]<class T>() {
    where_kernel<T>(out, condition, converted(self, shape.dtype), converted(other, shape.dtype));
  });
  return out;
}

Tensor where_meta(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const WhereShape shape = where_shape(condition, self, other);
  return detail::make_empty(shape.sizes, shape.dtype, self.device());
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    m.def(std::string(name) + ".Tensor(Tensor self, Tensor other) -> Tensor");
    m.def(std::string(name) + ".Scalar(Tensor self, Scalar other) -> Tensor");
  }
  m.def("logical_not(Tensor self) -> Tensor");
  m.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("eq.Tensor", &compare_cpu<Comparison::eq>);
  m.impl("ne.Tensor", &compare_cpu<Comparison::ne>);
  m.impl("lt.Tensor", &compare_cpu<Comparison::lt>);
  m.impl("le.Tensor", &compare_cpu<Comparison::le>);
  m.impl("gt.Tensor", &compare_cpu<Comparison::gt>);
  m.impl("ge.Tensor", &compare_cpu<Comparison::ge>);
  m.impl("eq.Scalar", &compare_scalar_cpu<Comparison::eq>);
  m.impl("ne.Scalar", &compare_scalar_cpu<Comparison::ne>);
  m.impl("lt.Scalar", &compare_scalar_cpu<Comparison::lt>);
  m.impl("le.Scalar", &compare_scalar_cpu<Comparison::le>);
  m.impl("gt.Scalar", &compare_scalar_cpu<Comparison::gt>);
  m.impl("ge.Scalar", &compare_scalar_cpu<Comparison::ge>);
  m.impl("logical_not", &logical_not_cpu);
  m.impl("where.self", &where_cpu);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("eq.Tensor", &compare_meta<Comparison::eq>);
  m.impl("ne.Tensor", &compare_meta<Comparison::ne>);
  m.impl("lt.Tensor", &compare_meta<Comparison::lt>);
  m.impl("le.Tensor", &compare_meta<Comparison::le>);
  m.impl("gt.Tensor", &compare_meta<Comparison::gt>);
  m.impl("ge.Tensor", &compare_meta<Comparison::ge>);
  m.impl("eq.Scalar", &compare_scalar_meta<Comparison::eq>);
  m.impl("ne.Scalar", &compare_scalar_meta<Comparison::ne>);
  m.impl("lt.Scalar", &compare_scalar_meta<Comparison::lt>);
  m.impl("le.Scalar", &compare_scalar_meta<Comparison::le>);
  m.impl("gt.Scalar", &compare_scalar_meta<Comparison::gt>);
  m.impl("ge.Scalar", &compare_scalar_meta<Comparison::ge>);
  m.impl("logical_not", &logical_not_meta);
  m.impl("where.self", &where_meta);
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
    const Tensor condition = ctx->get_saved_variables()[0];
    const Tensor& g = grads[0];
    const Tensor zero = zeros({}, g.options());
    return {Tensor(), ctx->needs_input_grad(1) ? where(condition, g, zero) : Tensor(),
            ctx->needs_input_grad(2) ? where(condition, zero, g) : Tensor()};
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
