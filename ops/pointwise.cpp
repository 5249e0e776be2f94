// Pointwise arithmetic: add, sub, mul, div (tensor and scalar operands, in-place variants).
// Schema, shape/dtype function, CPU and Meta kernels, registrations and free functions.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>

namespace strata {
namespace {

enum class Arith { add, sub, mul, div };

constexpr const char* arith_name(Arith kind, bool in_place) {
  switch (kind) {
    case Arith::add: return in_place ? "add_" : "add";
    case Arith::sub: return in_place ? "sub_" : "sub";
    case Arith::mul: return in_place ? "mul_" : "mul";
    case Arith::div: return in_place ? "div_" : "div";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// Shape and dtype: the one function the CPU and Meta kernels share.

struct BinaryShape {
  DimVector sizes;
  ScalarType dtype;  // the inputs are cast to it, the arithmetic runs in it, the output has it
};

// Note [Arithmetic dtype rules]
// The dtype is torch.result_type of the operands (Note [Result type]). div is always true
// division, so integral and bool results become float32. sub refuses bool operands like
// PyTorch (use logical_not / logical_xor). alpha must be integral when the result is
// integral, and may be bool only when the result is bool.
void check_arith(Arith kind, const char* op, bool self_bool, bool other_bool, ScalarType dtype, const Scalar& alpha) {
  STRATA_CHECK_TYPE(kind != Arith::sub || (!self_bool && !other_bool), "[", op,
                    "] subtraction with a bool tensor is not supported; use logical_not() or logical_xor() instead");
  STRATA_CHECK_TYPE(is_floating_point(dtype) || !alpha.is_floating_point(), "[", op,
                    "] for integral input tensors, alpha must not be a floating point number (got ", alpha, ")");
  STRATA_CHECK_TYPE(!alpha.is_bool() || dtype == kBool, "[", op, "] a bool alpha is only supported for bool results");
}

ScalarType arith_dtype(Arith kind, ScalarType promoted) {
  return kind == Arith::div && !is_floating_point(promoted) ? kFloat32 : promoted;
}

BinaryShape binary_shape(Arith kind, const char* op, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  detail::check_same_device(op, self, other);
  BinaryShape shape{broadcast_shapes(self.sizes(), other.sizes(), op), result_type(self, other)};
  check_arith(kind, op, self.dtype() == kBool, other.dtype() == kBool, shape.dtype, alpha);
  shape.dtype = arith_dtype(kind, shape.dtype);
  return shape;
}

BinaryShape scalar_shape(Arith kind, const char* op, const Tensor& self, const Scalar& other, const Scalar& alpha) {
  BinaryShape shape{DimVector(self.sizes()), result_type(self, other)};
  check_arith(kind, op, self.dtype() == kBool, other.is_bool(), shape.dtype, alpha);
  shape.dtype = arith_dtype(kind, shape.dtype);
  return shape;
}

// In-place: the result must keep self's shape and be castable to self's dtype.
void check_in_place(const char* op, const Tensor& self, const BinaryShape& shape) {
  STRATA_CHECK_VALUE(shape.sizes.ref() == self.sizes(), "[", op, "] output with shape ", self.sizes(),
                     " doesn't match the broadcast shape ", shape.sizes.ref());
  detail::check_can_cast(op, shape.dtype, self.dtype());
  detail::check_no_internal_overlap(op, self);
}

// ---------------------------------------------------------------------------------------
// CPU arithmetic. The functors work in compute_type_t<T>; integers wrap.

template <class C>
struct AddOp {
  C alpha;
  C operator()(C x, C y) const { return detail::wrapping_add(x, detail::wrapping_mul(alpha, y)); }
};
template <class C>
struct AddOneOp {
  C operator()(C x, C y) const { return detail::wrapping_add(x, y); }
};
template <class C>
struct SubOp {
  C alpha;
  C operator()(C x, C y) const { return detail::wrapping_sub(x, detail::wrapping_mul(alpha, y)); }
};
template <class C>
struct SubOneOp {
  C operator()(C x, C y) const { return detail::wrapping_sub(x, y); }
};
template <class C>
struct MulOp {
  C operator()(C x, C y) const { return detail::wrapping_mul(x, y); }
};
template <class C>
struct DivOp {
  C operator()(C x, C y) const { return x / y; }
};

// Calls fn(op) with the functor for `kind` in compute type C.
template <class T, class Fn>
void with_arith_op(Arith kind, const Scalar& alpha, const char* name, Fn&& fn) {
  using C = compute_type_t<T>;
  const bool unit_alpha = alpha.to_double() == 1.0;
  switch (kind) {
    case Arith::add:
      if (unit_alpha) return fn(AddOneOp<C>{});
      return fn(AddOp<C>{detail::checked_scalar<T>(alpha, name)});
    case Arith::sub:
      if (unit_alpha) return fn(SubOneOp<C>{});
      return fn(SubOp<C>{detail::checked_scalar<T>(alpha, name)});
    case Arith::mul: return fn(MulOp<C>{});
    case Arith::div:
      if constexpr (std::is_floating_point_v<C>) return fn(DivOp<C>{});
      STRATA_INTERNAL_ASSERT(false, "div on an integral compute type");
  }
}

// out = a (op) b, a and b broadcast to out; out's dtype is the compute dtype. A one-element
// operand is read once as a value (no cast of the tensor, no broadcast machinery).
void compute_binary(Arith kind, const char* name, const Tensor& out, const Tensor& a, const Tensor& b,
                    const Scalar& alpha) {
  const ScalarType dtype = out.dtype();
  visit_dtype(dtype, [&]<class T>() {
    using C = compute_type_t<T>;
    with_arith_op<T>(kind, alpha, name, [&](const auto& op) {
      if (b.numel() == 1 && out.numel() != 0) {
        const C c = static_cast<C>(detail::read_scalar(b).to<T>());
        const Tensor a_cast = a.dtype() == dtype ? a : detail::cast_to(a, dtype);
        detail::unary_kernel<T>(out, a_cast, [&op, c](C x) { return op(x, c); });
      } else if (a.numel() == 1 && out.numel() != 0 && !out.is_same(a)) {
        const C c = static_cast<C>(detail::read_scalar(a).to<T>());
        const Tensor b_cast = b.dtype() == dtype ? b : detail::cast_to(b, dtype);
        detail::unary_kernel<T>(out, b_cast, [&op, c](C y) { return op(c, y); });
      } else {
        const Tensor a_cast = a.dtype() == dtype ? a : detail::cast_to(a, dtype);
        const Tensor b_cast = b.dtype() == dtype ? b : detail::cast_to(b, dtype);
        detail::binary_kernel<T>(out, a_cast, b_cast, op);
      }
    });
  });
}

// out = a (op) value, a broadcast to out; the value converts with overflow checks.
void compute_scalar(Arith kind, const char* name, const Tensor& out, const Tensor& a, const Scalar& value,
                    const Scalar& alpha) {
  const ScalarType dtype = out.dtype();
  visit_dtype(dtype, [&]<class T>() {
    using C = compute_type_t<T>;
    const C c = detail::checked_scalar<T>(value, name);
    with_arith_op<T>(kind, alpha, name, [&](const auto& op) {
      const Tensor a_cast = a.dtype() == dtype ? a : detail::cast_to(a, dtype);
      detail::unary_kernel<T>(out, a_cast, [&op, c](C x) { return op(x, c); });
    });
  });
}

// ---------------------------------------------------------------------------------------
// Kernels. Alpha-less schemas (mul, div) reach these with alpha = 1.

template <Arith kind>
Tensor binary_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, false);
  const BinaryShape shape = binary_shape(kind, name, self, other, alpha);
  Tensor out = detail::make_empty(shape.sizes, shape.dtype, self.device());
  compute_binary(kind, name, out, self, other, alpha);
  return out;
}

template <Arith kind>
Tensor binary_meta(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  const BinaryShape shape = binary_shape(kind, arith_name(kind, false), self, other, alpha);
  return detail::make_empty(shape.sizes, shape.dtype, self.device());
}

template <Arith kind>
Tensor scalar_cpu(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, false);
  const BinaryShape shape = scalar_shape(kind, name, self, other, alpha);
  Tensor out = detail::make_empty(shape.sizes, shape.dtype, self.device());
  compute_scalar(kind, name, out, self, other, alpha);
  return out;
}

template <Arith kind>
Tensor scalar_meta(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  const BinaryShape shape = scalar_shape(kind, arith_name(kind, false), self, other, alpha);
  return detail::make_empty(shape.sizes, shape.dtype, self.device());
}

// Note [In-place arithmetic]
// When the computed dtype equals self's, the kernel writes into self directly (the fast
// paths handle out == a). Otherwise (float32 self += float64 other) the result is computed
// in the promoted dtype and converted into self, as PyTorch does. Either way the version
// counter is bumped, Meta tensors included, so saved-tensor checks behave the same.
template <Arith kind>
Tensor binary_in_place_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, true);
  const BinaryShape shape = binary_shape(kind, name, self, other, alpha);
  check_in_place(name, self, shape);
  detail::check_no_partial_overlap(name, self, other);
  if (shape.dtype == self.dtype()) {
    compute_binary(kind, name, self, self, other, alpha);
  } else {
    Tensor result = detail::make_empty(shape.sizes, shape.dtype, self.device());
    compute_binary(kind, name, result, self, other, alpha);
    detail::copy_kernel(self, result);
  }
  return self;
}

template <Arith kind>
Tensor binary_in_place_meta(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, true);
  check_in_place(name, self, binary_shape(kind, name, self, other, alpha));
  detail::check_no_partial_overlap(name, self, other);
  return self;
}

template <Arith kind>
Tensor scalar_in_place_cpu(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, true);
  const BinaryShape shape = scalar_shape(kind, name, self, other, alpha);
  check_in_place(name, self, shape);
  if (shape.dtype == self.dtype()) {
    compute_scalar(kind, name, self, self, other, alpha);
  } else {
    Tensor result = detail::make_empty(shape.sizes, shape.dtype, self.device());
    compute_scalar(kind, name, result, self, other, alpha);
    detail::copy_kernel(self, result);
  }
  return self;
}

template <Arith kind>
Tensor scalar_in_place_meta(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  constexpr const char* name = arith_name(kind, true);
  check_in_place(name, self, scalar_shape(kind, name, self, other, alpha));
  return self;
}

// Signatures without alpha, for mul and div.
template <Tensor (*kernel)(const Tensor&, const Tensor&, const Scalar&)>
Tensor without_alpha(const Tensor& self, const Tensor& other) {
  return kernel(self, other, 1);
}
template <Tensor (*kernel)(const Tensor&, const Scalar&, const Scalar&)>
Tensor without_alpha_scalar(const Tensor& self, const Scalar& other) {
  return kernel(self, other, 1);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("mul.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("div.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("div.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  m.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  m.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("add.Tensor", &binary_cpu<Arith::add>);
  m.impl("add.Scalar", &scalar_cpu<Arith::add>);
  m.impl("sub.Tensor", &binary_cpu<Arith::sub>);
  m.impl("sub.Scalar", &scalar_cpu<Arith::sub>);
  m.impl("mul.Tensor", &without_alpha<&binary_cpu<Arith::mul>>);
  m.impl("mul.Scalar", &without_alpha_scalar<&scalar_cpu<Arith::mul>>);
  m.impl("div.Tensor", &without_alpha<&binary_cpu<Arith::div>>);
  m.impl("div.Scalar", &without_alpha_scalar<&scalar_cpu<Arith::div>>);
  m.impl("add_.Tensor", &binary_in_place_cpu<Arith::add>);
  m.impl("add_.Scalar", &scalar_in_place_cpu<Arith::add>);
  m.impl("sub_.Tensor", &binary_in_place_cpu<Arith::sub>);
  m.impl("sub_.Scalar", &scalar_in_place_cpu<Arith::sub>);
  m.impl("mul_.Tensor", &without_alpha<&binary_in_place_cpu<Arith::mul>>);
  m.impl("mul_.Scalar", &without_alpha_scalar<&scalar_in_place_cpu<Arith::mul>>);
  m.impl("div_.Tensor", &without_alpha<&binary_in_place_cpu<Arith::div>>);
  m.impl("div_.Scalar", &without_alpha_scalar<&scalar_in_place_cpu<Arith::div>>);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("add.Tensor", &binary_meta<Arith::add>);
  m.impl("add.Scalar", &scalar_meta<Arith::add>);
  m.impl("sub.Tensor", &binary_meta<Arith::sub>);
  m.impl("sub.Scalar", &scalar_meta<Arith::sub>);
  m.impl("mul.Tensor", &without_alpha<&binary_meta<Arith::mul>>);
  m.impl("mul.Scalar", &without_alpha_scalar<&scalar_meta<Arith::mul>>);
  m.impl("div.Tensor", &without_alpha<&binary_meta<Arith::div>>);
  m.impl("div.Scalar", &without_alpha_scalar<&scalar_meta<Arith::div>>);
  m.impl("add_.Tensor", &binary_in_place_meta<Arith::add>);
  m.impl("add_.Scalar", &scalar_in_place_meta<Arith::add>);
  m.impl("sub_.Tensor", &binary_in_place_meta<Arith::sub>);
  m.impl("sub_.Scalar", &scalar_in_place_meta<Arith::sub>);
  m.impl("mul_.Tensor", &without_alpha<&binary_in_place_meta<Arith::mul>>);
  m.impl("mul_.Scalar", &without_alpha_scalar<&scalar_in_place_meta<Arith::mul>>);
  m.impl("div_.Tensor", &without_alpha<&binary_in_place_meta<Arith::div>>);
  m.impl("div_.Scalar", &without_alpha_scalar<&scalar_in_place_meta<Arith::div>>);
}

// ---------------------------------------------------------------------------------------
// Derivatives. Each is a Function whose forward calls the op (Autograd excluded, so it goes
// to the backend kernel) and whose backward is written in strata ops, so it differentiates
// again under create_graph. Gradients of broadcast inputs are summed back to the input's
// shape by the Function machinery (see fit_gradient in autograd/function.cpp).

namespace {
using autograd::AutogradContext;

// d(self + alpha * other) = (g, alpha * g); sub is add with -alpha.
template <bool Negate>
struct AddTensorFunction : autograd::Function<AddTensorFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other, const Scalar& alpha) {
    ctx->saved_data["alpha"] = alpha;
    return Negate ? sub(self, other, alpha) : add(self, other, alpha);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor& g = grads[0];
    double alpha = ctx->saved_data["alpha"].to_double() * (Negate ? -1.0 : 1.0);
    return {g, ctx->needs_input_grad(1) ? (alpha == 1.0 ? g : g * alpha) : Tensor(), Tensor()};
  }
};

template <bool Negate>
struct AddScalarFunction : autograd::Function<AddScalarFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext*, const Tensor& self, const Scalar& other, const Scalar& alpha) {
    return Negate ? sub(self, other, alpha) : add(self, other, alpha);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {grads[0], Tensor(), Tensor()}; }
};

struct MulTensorFunction : autograd::Function<MulTensorFunction> {
  static constexpr std::string_view name() { return "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? self : Tensor(), ctx->needs_input_grad(0) ? other : Tensor()});
    return mul(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    tensor_list saved = ctx->get_saved_variables();
    const Tensor& g = grads[0];
    return {ctx->needs_input_grad(0) ? g * saved[1] : Tensor(), ctx->needs_input_grad(1) ? g * saved[0] : Tensor()};
  }
};

struct MulScalarFunction : autograd::Function<MulScalarFunction> {
  static constexpr std::string_view name() { return "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other) {
    ctx->saved_data["other"] = other;
    return mul(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {grads[0] * ctx->saved_data["other"].to_scalar(), Tensor()};
  }
};

struct DivTensorFunction : autograd::Function<DivTensorFunction> {
  static constexpr std::string_view name() { return "DivBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? self : Tensor(), other});
    return div(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    tensor_list saved = ctx->get_saved_variables();
    const Tensor& g = grads[0];
    const Tensor& other = saved[1];
    return {ctx->needs_input_grad(0) ? g / other : Tensor(),
            ctx->needs_input_grad(1) ? -(g * saved[0]) / (other * other) : Tensor()};
  }
};

struct DivScalarFunction : autograd::Function<DivScalarFunction> {
  static constexpr std::string_view name() { return "DivBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other) {
    ctx->saved_data["other"] = other;
    return div(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {grads[0] / ctx->saved_data["other"].to_scalar(), Tensor()};
  }
};

// In-place variants: mark self dirty so it is rebased onto the new Node. mul_/div_ need
// self's old value for other's gradient, so they keep a copy only when other needs one.
template <bool Negate>
struct AddInplaceTensorFunction : autograd::Function<AddInplaceTensorFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other, const Scalar& alpha) {
    ctx->saved_data["alpha"] = alpha;
    Negate ? sub_(self, other, alpha) : add_(self, other, alpha);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return AddTensorFunction<Negate>::backward(ctx, std::move(grads));
  }
};

template <bool Negate>
struct AddInplaceScalarFunction : autograd::Function<AddInplaceScalarFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other, const Scalar& alpha) {
    Negate ? sub_(self, other, alpha) : add_(self, other, alpha);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {grads[0], Tensor(), Tensor()}; }
};

template <bool Divide>
struct MulInplaceTensorFunction : autograd::Function<MulInplaceTensorFunction<Divide>> {
  static constexpr std::string_view name() { return Divide ? "DivBackward" : "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    Tensor original;
    if (ctx->needs_input_grad(1)) {
      EnableGradGuard record;  // the copy stays on self's history, so double backward reaches it
      original = self.clone();
    }
    Divide ? div_(self, other) : mul_(self, other);
    ctx->save_for_backward({original, other});
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    tensor_list saved = ctx->get_saved_variables();
    const Tensor& g = grads[0];
    const Tensor& other = saved[1];
    if (Divide)
      return {g / other, ctx->needs_input_grad(1) ? -(g * saved[0]) / (other * other) : Tensor()};
    return {g * other, ctx->needs_input_grad(1) ? g * saved[0] : Tensor()};
  }
};

template <bool Divide>
struct MulInplaceScalarFunction : autograd::Function<MulInplaceScalarFunction<Divide>> {
  static constexpr std::string_view name() { return Divide ? "DivBackward" : "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other) {
    ctx->saved_data["other"] = other;
    Divide ? div_(self, other) : mul_(self, other);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Scalar other = ctx->saved_data["other"].to_scalar();
    return {Divide ? grads[0] / other : grads[0] * other, Tensor()};
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("add.Tensor", autograd::kernel<AddTensorFunction<false>>());
  m.impl("add.Scalar", autograd::kernel<AddScalarFunction<false>>());
  m.impl("sub.Tensor", autograd::kernel<AddTensorFunction<true>>());
  m.impl("sub.Scalar", autograd::kernel<AddScalarFunction<true>>());
  m.impl("mul.Tensor", autograd::kernel<MulTensorFunction>());
  m.impl("mul.Scalar", autograd::kernel<MulScalarFunction>());
  m.impl("div.Tensor", autograd::kernel<DivTensorFunction>());
  m.impl("div.Scalar", autograd::kernel<DivScalarFunction>());
  m.impl("add_.Tensor", autograd::kernel<AddInplaceTensorFunction<false>>());
  m.impl("add_.Scalar", autograd::kernel<AddInplaceScalarFunction<false>>());
  m.impl("sub_.Tensor", autograd::kernel<AddInplaceTensorFunction<true>>());
  m.impl("sub_.Scalar", autograd::kernel<AddInplaceScalarFunction<true>>());
  m.impl("mul_.Tensor", autograd::kernel<MulInplaceTensorFunction<false>>());
  m.impl("mul_.Scalar", autograd::kernel<MulInplaceScalarFunction<false>>());
  m.impl("div_.Tensor", autograd::kernel<MulInplaceTensorFunction<true>>());
  m.impl("div_.Scalar", autograd::kernel<MulInplaceScalarFunction<true>>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = find_op("strata::add.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  return op.call(self, other, alpha);
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  static const auto op = find_op("strata::add.Scalar").typed<Tensor(const Tensor&, const Scalar&, const Scalar&)>();
  return op.call(self, other, alpha);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = find_op("strata::sub.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  return op.call(self, other, alpha);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  static const auto op = find_op("strata::sub.Scalar").typed<Tensor(const Tensor&, const Scalar&, const Scalar&)>();
  return op.call(self, other, alpha);
}
Tensor mul(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::mul.Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}
Tensor mul(const Tensor& self, const Scalar& other) {
  static const auto op = find_op("strata::mul.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  return op.call(self, other);
}
Tensor div(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::div.Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}
Tensor div(const Tensor& self, const Scalar& other) {
  static const auto op = find_op("strata::div.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  return op.call(self, other);
}

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = find_op("strata::add_.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  op.call(self, other, alpha);
  return self;
}
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  static const auto op = find_op("strata::add_.Scalar").typed<Tensor(const Tensor&, const Scalar&, const Scalar&)>();
  op.call(self, other, alpha);
  return self;
}
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = find_op("strata::sub_.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  op.call(self, other, alpha);
  return self;
}
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  static const auto op = find_op("strata::sub_.Scalar").typed<Tensor(const Tensor&, const Scalar&, const Scalar&)>();
  op.call(self, other, alpha);
  return self;
}
const Tensor& mul_(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::mul_.Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  op.call(self, other);
  return self;
}
const Tensor& mul_(const Tensor& self, const Scalar& other) {
  static const auto op = find_op("strata::mul_.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  op.call(self, other);
  return self;
}
const Tensor& div_(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::div_.Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  op.call(self, other);
  return self;
}
const Tensor& div_(const Tensor& self, const Scalar& other) {
  static const auto op = find_op("strata::div_.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  op.call(self, other);
  return self;
}

}  // namespace strata
