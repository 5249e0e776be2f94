// Pointwise arithmetic: add, sub, mul, div (tensor and scalar operands, in-place and out=
// variants). Schemas, CPU compute, derivatives, registrations and free functions; the shape
// functions are in shapes/pointwise.h and the Meta kernels derive from them.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/shapes/pointwise.h>
#include <strata/ops/structured.h>

#include <cmath>
#include <type_traits>

namespace strata {
namespace {

using shapes::Arith;

using shapes::arith_name;

// ---------------------------------------------------------------------------------------
// CPU arithmetic. The functors work in compute_type_t<T>; integers wrap.

// Note [Fused alpha]
// add(x, y, alpha) and sub(x, y, alpha) on floating types round once: x + alpha * y is a fused
// multiply-add, as ATen's vectorised kernels (vec::fmadd) and the CUDA kernels compute it. GCC
// contracts the plain expression only where the target has FMA instructions, so spelling it
// std::fma keeps the results the same on every build (glibc picks the FMA instruction at run
// time where the CPU has one).
template <class C>
struct AddOp {
  C alpha;
  C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) return std::fma(alpha, y, x);
    else return detail::wrapping_add(x, detail::wrapping_mul(alpha, y));
  }
};
template <class C>
struct AddOneOp {
  C operator()(C x, C y) const { return detail::wrapping_add(x, y); }
};
template <class C>
struct SubOp {
  C alpha;
  C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) return std::fma(-alpha, y, x);  // Note [Fused alpha]
    else return detail::wrapping_sub(x, detail::wrapping_mul(alpha, y));
  }
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

// The one element of `t` as a T, in compute type C (read directly when t holds T).
template <class T, class C>
C one_value(const Tensor& t) {
  if (t.dtype() == scalar_type_of<T>) return static_cast<C>(*detail::data_of<T>(t));
  return static_cast<C>(detail::read_scalar(t).to<T>());
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
        const C c = one_value<T, C>(b);
        const Tensor a_cast = a.dtype() == dtype ? a : detail::cast_to(a, dtype);
        detail::unary_kernel<T>(out, a_cast, [&op, c](C x) { return op(x, c); });
      } else if (a.numel() == 1 && out.numel() != 0 && !out.is_same(a)) {
        const C c = one_value<T, C>(a);
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
// CPU compute (Note [Structured ops]): out has the shape function's sizes and dtype; it may be
// self (in place) or a strided out=. Alpha-less schemas compute with alpha = 1.

template <Arith kind>
void binary_out_cpu(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  compute_binary(kind, arith_name(kind), out, self, other, alpha);
}
template <Arith kind>
void scalar_out_cpu(const Tensor& out, const Tensor& self, const Scalar& other, const Scalar& alpha) {
  compute_scalar(kind, arith_name(kind), out, self, other, alpha);
}
template <Arith kind>
void binary_out_cpu_no_alpha(const Tensor& out, const Tensor& self, const Tensor& other) {
  compute_binary(kind, arith_name(kind), out, self, other, 1);
}
template <Arith kind>
void scalar_out_cpu_no_alpha(const Tensor& out, const Tensor& self, const Scalar& other) {
  compute_scalar(kind, arith_name(kind), out, self, other, 1);
}

// Note [Small same-shape float ops]
// A functional add, sub, mul or div of two float32 CPU tensors of the same sizes, both
// contiguous, with at most kSmallElements elements, is the common case of per-op-bound code.
// It needs no broadcasting, promotion or strided loop, so it skips the shape function and the
// generic kernel: the output is a new contiguous float32 tensor of those sizes, as the shape
// function would make it, and each element is the same one float operation the generic
// functors perform (unit alpha only), so the results are bit for bit the generic kernel's.
// Larger tensors keep the generic kernel, which may split the work across threads.
constexpr int64_t kSmallElements = 4096;

bool small_same_float(const Tensor& self, const Tensor& other) {
  return self.dtype() == kFloat32 && other.dtype() == kFloat32 && self.device().is_cpu() && other.device().is_cpu() &&
         self.numel() <= kSmallElements && self.sizes() == other.sizes() && self.is_contiguous() &&
         other.is_contiguous();
}

template <Arith kind>
Tensor small_float_binary(const Tensor& self, const Tensor& other) {
  Tensor out = detail::make_empty(self.sizes(), kFloat32, self.device());
  const float* a = detail::data_of<float>(self);  // checked above: float32 CPU tensors
  const float* b = detail::data_of<float>(other);
  float* o = detail::data_of<float>(out);
  const int64_t n = self.numel();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kind == Arith::add) o[i] = a[i] + b[i];
    else if constexpr (kind == Arith::sub) o[i] = a[i] - b[i];
    else if constexpr (kind == Arith::mul) o[i] = a[i] * b[i];
    else o[i] = a[i] / b[i];
  }
  return out;
}

template <auto Shape, Arith kind>
Tensor binary_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  // A bool alpha is an error for float results: the shape function reports it.
  if (small_same_float(self, other) && !alpha.is_bool() && alpha.to_double() == 1.0)
    return small_float_binary<kind>(self, other);
  return detail::Structured<Shape, &binary_out_cpu<kind>>::functional(self, other, alpha);
}
template <auto Shape, Arith kind>
Tensor binary_cpu_no_alpha(const Tensor& self, const Tensor& other) {
  if (small_same_float(self, other)) return small_float_binary<kind>(self, other);
  return detail::Structured<Shape, &binary_out_cpu_no_alpha<kind>>::functional(self, other);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using namespace shapes;
  using detail::def_structured, detail::def_structured_in_place, detail::def_structured_out;
  def_structured<&add_tensor>(m, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  def_structured<&add_scalar>(m, "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  def_structured<&sub_tensor>(m, "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  def_structured<&sub_scalar>(m, "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  def_structured<&mul_tensor>(m, "mul.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&mul_scalar>(m, "mul.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured<&div_tensor>(m, "div.Tensor(Tensor self, Tensor other) -> Tensor");
  def_structured<&div_scalar>(m, "div.Scalar(Tensor self, Scalar other) -> Tensor");
  def_structured_in_place<&add_tensor_in_place, "add_">(
      m, "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  def_structured_in_place<&add_scalar_in_place, "add_">(
      m, "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  def_structured_in_place<&sub_tensor_in_place, "sub_">(
      m, "sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  def_structured_in_place<&sub_scalar_in_place, "sub_">(
      m, "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  def_structured_in_place<&mul_tensor_in_place, "mul_">(m, "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  def_structured_in_place<&mul_scalar_in_place, "mul_">(m, "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  def_structured_in_place<&div_tensor_in_place, "div_">(m, "div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  def_structured_in_place<&div_scalar_in_place, "div_">(m, "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  def_structured_out<&add_tensor, "add.out">(
      m, "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&sub_tensor, "sub.out">(
      m, "sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&mul_tensor, "mul.out">(m, "mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&div_tensor, "div.out">(m, "div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using namespace shapes;
  using detail::structured, detail::structured_in_place, detail::structured_out;
  m.impl("add.Tensor", &binary_cpu<&add_tensor, Arith::add>);  // Note [Small same-shape float ops]
  m.impl("add.Scalar", structured<&add_scalar, &scalar_out_cpu<Arith::add>>());
  m.impl("sub.Tensor", &binary_cpu<&sub_tensor, Arith::sub>);
  m.impl("sub.Scalar", structured<&sub_scalar, &scalar_out_cpu<Arith::sub>>());
  m.impl("mul.Tensor", &binary_cpu_no_alpha<&mul_tensor, Arith::mul>);
  m.impl("mul.Scalar", structured<&mul_scalar, &scalar_out_cpu_no_alpha<Arith::mul>>());
  m.impl("div.Tensor", &binary_cpu_no_alpha<&div_tensor, Arith::div>);
  m.impl("div.Scalar", structured<&div_scalar, &scalar_out_cpu_no_alpha<Arith::div>>());
  m.impl("add_.Tensor", structured_in_place<&add_tensor_in_place, &binary_out_cpu<Arith::add>, "add_">());
  m.impl("add_.Scalar", structured_in_place<&add_scalar_in_place, &scalar_out_cpu<Arith::add>, "add_">());
  m.impl("sub_.Tensor", structured_in_place<&sub_tensor_in_place, &binary_out_cpu<Arith::sub>, "sub_">());
  m.impl("sub_.Scalar", structured_in_place<&sub_scalar_in_place, &scalar_out_cpu<Arith::sub>, "sub_">());
  m.impl("mul_.Tensor", structured_in_place<&mul_tensor_in_place, &binary_out_cpu_no_alpha<Arith::mul>, "mul_">());
  m.impl("mul_.Scalar", structured_in_place<&mul_scalar_in_place, &scalar_out_cpu_no_alpha<Arith::mul>, "mul_">());
  m.impl("div_.Tensor", structured_in_place<&div_tensor_in_place, &binary_out_cpu_no_alpha<Arith::div>, "div_">());
  m.impl("div_.Scalar", structured_in_place<&div_scalar_in_place, &scalar_out_cpu_no_alpha<Arith::div>, "div_">());
  m.impl("add.out", structured_out<&add_tensor, &binary_out_cpu<Arith::add>, "add.out">());
  m.impl("sub.out", structured_out<&sub_tensor, &binary_out_cpu<Arith::sub>, "sub.out">());
  m.impl("mul.out", structured_out<&mul_tensor, &binary_out_cpu_no_alpha<Arith::mul>, "mul.out">());
  m.impl("div.out", structured_out<&div_tensor, &binary_out_cpu_no_alpha<Arith::div>, "div.out">());
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
    if (alpha.to_double() != 1.0) ctx->saved_data["alpha"] = alpha;  // one, the usual alpha, is not saved
    return Negate ? sub(self, other, alpha) : add(self, other, alpha);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor& g = grads[0];
    const double saved = ctx->saved_data.contains("alpha") ? ctx->saved_data.at("alpha").to_double() : 1.0;
    const double alpha = saved * (Negate ? -1.0 : 1.0);
    Tensor other_grad = ctx->needs_input_grad(1) ? (alpha == 1.0 ? g : g * alpha) : Tensor();
    return autograd::detail::gradients_in(std::move(grads), std::move(g), std::move(other_grad), Tensor());
  }
};

template <bool Negate>
struct AddScalarFunction : autograd::Function<AddScalarFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext*, const Tensor& self, const Scalar& other, const Scalar& alpha) {
    return Negate ? sub(self, other, alpha) : add(self, other, alpha);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), std::move(grads[0]), Tensor(), Tensor());
  }
};

struct MulTensorFunction : autograd::Function<MulTensorFunction> {
  static constexpr std::string_view name() { return "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? self : Tensor(), ctx->needs_input_grad(0) ? other : Tensor()});
    return mul(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& g = grads[0];
    return autograd::detail::gradients_in(std::move(grads), ctx->needs_input_grad(0) ? g * saved[1] : Tensor(),
                                          ctx->needs_input_grad(1) ? g * saved[0] : Tensor());
  }
};

struct MulScalarFunction : autograd::Function<MulScalarFunction> {
  static constexpr std::string_view name() { return "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other) {
    ctx->saved_data["other"] = other;
    return mul(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0] * ctx->saved_data["other"].to_scalar(), Tensor());
  }
};

// d(a / b)/db = -g a / b^2, computed as -g ((a / b) / b), as LibTorch does: b * b underflows
// to 0 (and overflows to inf) for |b| that (a / b) / b survives, e.g. 0 / b at b = 1e-30 in
// float32 gave NaN instead of 0.
struct DivTensorFunction : autograd::Function<DivTensorFunction> {
  static constexpr std::string_view name() { return "DivBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? self : Tensor(), other});
    return div(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& g = grads[0];
    const Tensor& other = saved[1];
    return autograd::detail::gradients_in(std::move(grads), ctx->needs_input_grad(0) ? g / other : Tensor(),
                                          ctx->needs_input_grad(1) ? -g * ((saved[0] / other) / other) : Tensor());
  }
};

struct DivScalarFunction : autograd::Function<DivScalarFunction> {
  static constexpr std::string_view name() { return "DivBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& other) {
    ctx->saved_data["other"] = other;
    return div(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0] / ctx->saved_data["other"].to_scalar(), Tensor());
  }
};

// In-place variants: mark self dirty so it is rebased onto the new Node. mul_/div_ need
// self's old value for other's gradient, so they keep a copy only when other needs one.
//
// Note [In-place operand aliasing self]
// mul_ and div_ also keep `other` for backward, and its saved version is the one after the
// forward (as for every Function). When `other` shares self's storage (`v.mul_(v)`, or one view
// of a tensor multiplied in place by another view of it), the op may have overwritten the
// values other's gradient formula reads, and no version check would notice: v.mul_(v) gave
// g * (v^2 + v) where the gradient is g * 2v. So such an `other` is copied before the op.
// LibTorch refuses these cases at backward (other's version moved); strata computes them.
template <bool Negate>
struct AddInplaceTensorFunction : autograd::Function<AddInplaceTensorFunction<Negate>> {
  static constexpr std::string_view name() { return Negate ? "SubBackward" : "AddBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other, const Scalar& alpha) {
    if (alpha.to_double() != 1.0) ctx->saved_data["alpha"] = alpha;  // as AddTensorFunction saves it
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
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), std::move(grads[0]), Tensor(), Tensor());
  }
};

template <bool Divide>
struct MulInplaceTensorFunction : autograd::Function<MulInplaceTensorFunction<Divide>> {
  static constexpr std::string_view name() { return Divide ? "DivBackward" : "MulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    Tensor original, saved_other = other;
    if (ctx->needs_input_grad(1)) {
      EnableGradGuard record;  // the copy stays on self's history, so double backward reaches it
      original = self.clone();
    }
    if (other.impl()->storage() == self.impl()->storage()) {  // Note [In-place operand aliasing self]
      EnableGradGuard record;
      saved_other = other.clone();
    }
    Divide ? div_(self, other) : mul_(self, other);
    ctx->save_for_backward({original, saved_other});
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& g = grads[0];
    const Tensor& other = saved[1];
    if (Divide)
      return autograd::detail::gradients_in(std::move(grads), g / other,
                                            ctx->needs_input_grad(1) ? -g * ((saved[0] / other) / other) : Tensor());
    return autograd::detail::gradients_in(std::move(grads), g * other,
                                          ctx->needs_input_grad(1) ? g * saved[0] : Tensor());
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
    return autograd::detail::gradients_in(std::move(grads), Divide ? grads[0] / other : grads[0] * other, Tensor());
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

// out= variants (LibTorch's at::add_out order: out first).
const Tensor& add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op =
      find_op("strata::add.out").typed<Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&)>();
  op.call(self, other, alpha, out);
  return out;
}
const Tensor& sub_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op =
      find_op("strata::sub.out").typed<Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&)>();
  op.call(self, other, alpha, out);
  return out;
}
const Tensor& mul_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::mul.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, other, out);
  return out;
}
const Tensor& div_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::div.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, other, out);
  return out;
}

}  // namespace strata
