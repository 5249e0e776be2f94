// CUDA kernels of ops/unary.cpp: the unary math ops and activations, gelu and gelu_backward,
// clamp, the in-place relu_ clamp_ zero_ fill_, and the out= variants. Shape functions and
// checks are ops/shapes/unary.h's; the math is cuda/unary_ops.h's (host-tested).
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/fill.h>
#include <strata/cuda/unary_ops.h>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/unary.h>
#include <strata/ops/structured.h>

namespace strata {
namespace cuda::detail {

// Each memory location once, as on the CPU (Note [Idempotent in-place ops] in ops/structured.h).
void fill_kernel(const Tensor& target, const Scalar& value, const char* op) {
  visit_dtype(target.dtype(), [&]<class T>() {
    const auto fill = strata::detail::checked_scalar<T>(value, op);
    launch_elementwise<T>(op, FillOp<compute_type_t<T>>{fill}, strata::detail::distinct_locations(target));
  });
}

}  // namespace cuda::detail

namespace {

using cuda::detail::converted, cuda::detail::launch_elementwise;

// The dtypes a kernel is instantiated for: the shape function has refused the others
// (Note [Unary dtype rules] in ops/shapes/unary.h), so they are never asked for.
enum class Served { all, no_bool, floating };

template <Served served, class T>
constexpr bool serves() {
  if constexpr (served == Served::floating) return is_floating_point(scalar_type_of<T>);
  else if constexpr (served == Served::no_bool) return !std::is_same_v<T, bool>;
  else return true;
}

// CUDA compute (Note [Structured ops]): out has the shape function's sizes and dtype; it may
// be strided, or self itself (in place, out=). Integral inputs of the floating ops are
// converted to out's dtype (float32) first.
template <class Op, Served served>
void unary_out_cuda(const Tensor& out, const Tensor& self) {
  const Tensor input = converted(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (serves<served, T>()) launch_elementwise<T, T>(Op::name, Op{}, out, input);
  });
}

void gelu_out_cuda(const Tensor& out, const Tensor& self, std::string_view approximate) {
  const shapes::GeluForm form = shapes::gelu_form("gelu", approximate);
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (serves<Served::floating, T>()) {
      if (form == shapes::GeluForm::none) launch_elementwise<T, T>("gelu", cuda::detail::GeluErfOp{}, out, self);
      else launch_elementwise<T, T>("gelu", cuda::detail::GeluTanhOp{}, out, self);
    }
  });
}

void gelu_backward_out_cuda(const Tensor& out, const Tensor& grad_output, const Tensor& self,
                            std::string_view approximate) {
  const shapes::GeluForm form = shapes::gelu_form("gelu_backward", approximate);
  const Tensor g = converted(grad_output, out.dtype()), x = converted(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (serves<Served::floating, T>()) {
      if (form == shapes::GeluForm::none)
        launch_elementwise<T, T, T>("gelu_backward", cuda::detail::GeluErfBackwardOp{}, out, g, x);
      else launch_elementwise<T, T, T>("gelu_backward", cuda::detail::GeluTanhBackwardOp{}, out, g, x);
    }
  });
}

template <class Op>
void activation_backward_out_cuda(const Tensor& out, const Tensor& grad_output, const Tensor& output) {
  const Tensor g = converted(grad_output, out.dtype()), y = converted(output, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (serves<Served::floating, T>()) launch_elementwise<T, T, T>(Op::name, Op{}, out, g, y);
  });
}

// clamp (Note [clamp dtype] in ops/shapes/unary.h): the bounds convert on the host, checked.
void clamp_out_cuda(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                    const std::optional<Scalar>& max) {
  const Tensor input = converted(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (serves<Served::no_bool, T>()) {
      using C = compute_type_t<T>;
      const C low = min ? strata::detail::checked_scalar<T>(*min, "clamp") : cuda::detail::clamp_lowest<C>();
      const C high = max ? strata::detail::checked_scalar<T>(*max, "clamp") : cuda::detail::clamp_highest<C>();
      launch_elementwise<T, T>("clamp", cuda::detail::ClampOp<C>{low, high}, out, input);
    }
  });
}

void fill_out_cuda(const Tensor& out, const Tensor&, const Scalar& value) {
  cuda::detail::fill_kernel(out, value, "fill_");
}
void zero_out_cuda(const Tensor& out, const Tensor&) { cuda::detail::fill_kernel(out, 0, "zero_"); }

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured, detail::structured_in_place, detail::structured_out;
  using namespace cuda::detail;  // the functors and copy_kernel
  constexpr Served all = Served::all, no_bool = Served::no_bool, floating = Served::floating;
  m.impl("neg", structured<&shapes::neg, &unary_out_cuda<NegOp, no_bool>>());
  m.impl("abs", structured<&shapes::abs, &unary_out_cuda<AbsOp, all>>());
  m.impl("sign", structured<&shapes::sign, &unary_out_cuda<SignOp, all>>());
  m.impl("exp", structured<&shapes::exp, &unary_out_cuda<ExpOp, floating>>());
  m.impl("log", structured<&shapes::log, &unary_out_cuda<LogOp, floating>>());
  m.impl("sqrt", structured<&shapes::sqrt, &unary_out_cuda<SqrtOp, floating>>());
  m.impl("rsqrt", structured<&shapes::rsqrt, &unary_out_cuda<RsqrtOp, floating>>());
  m.impl("sin", structured<&shapes::sin, &unary_out_cuda<SinOp, floating>>());
  m.impl("cos", structured<&shapes::cos, &unary_out_cuda<CosOp, floating>>());
  m.impl("tanh", structured<&shapes::tanh, &unary_out_cuda<TanhOp, floating>>());
  m.impl("sigmoid", structured<&shapes::sigmoid, &unary_out_cuda<SigmoidOp, floating>>());
  m.impl("relu", structured<&shapes::relu, &unary_out_cuda<ReluOp, no_bool>>());
  m.impl("silu", structured<&shapes::silu, &unary_out_cuda<SiluOp, floating>>());
  m.impl("gelu", structured<&shapes::gelu, &gelu_out_cuda>());
  m.impl("gelu_backward", structured<&shapes::gelu_backward, &gelu_backward_out_cuda>());
  m.impl("tanh_backward",
         structured<&shapes::tanh_backward, &activation_backward_out_cuda<cuda::detail::TanhBackwardOp>>());
  m.impl("sigmoid_backward",
         structured<&shapes::sigmoid_backward, &activation_backward_out_cuda<cuda::detail::SigmoidBackwardOp>>());
  m.impl("clamp", structured<&shapes::clamp, &clamp_out_cuda>());
  m.impl("relu_",
         structured_in_place<&shapes::relu_in_place, &unary_out_cuda<ReluOp, no_bool>, "relu_", &copy_kernel>());
  m.impl("clamp_", structured_in_place<&shapes::clamp_in_place, &clamp_out_cuda, "clamp_", &copy_kernel>());
  constexpr auto allow = strata::detail::SelfOverlap::allow;  // Note [Idempotent in-place ops]
  m.impl("zero_", structured_in_place<&shapes::zero_in_place, &zero_out_cuda, "zero_", &copy_kernel, allow>());
  m.impl("fill_.Scalar",
         structured_in_place<&shapes::fill_scalar_in_place, &fill_out_cuda, "fill_", &copy_kernel, allow>());
  m.impl("neg.out", structured_out<&shapes::neg, &unary_out_cuda<NegOp, no_bool>, "neg.out", &copy_kernel>());
  m.impl("abs.out", structured_out<&shapes::abs, &unary_out_cuda<AbsOp, all>, "abs.out", &copy_kernel>());
  m.impl("sign.out", structured_out<&shapes::sign, &unary_out_cuda<SignOp, all>, "sign.out", &copy_kernel>());
  m.impl("exp.out", structured_out<&shapes::exp, &unary_out_cuda<ExpOp, floating>, "exp.out", &copy_kernel>());
  m.impl("log.out", structured_out<&shapes::log, &unary_out_cuda<LogOp, floating>, "log.out", &copy_kernel>());
  m.impl("sqrt.out", structured_out<&shapes::sqrt, &unary_out_cuda<SqrtOp, floating>, "sqrt.out", &copy_kernel>());
  m.impl("rsqrt.out", structured_out<&shapes::rsqrt, &unary_out_cuda<RsqrtOp, floating>, "rsqrt.out", &copy_kernel>());
  m.impl("sin.out", structured_out<&shapes::sin, &unary_out_cuda<SinOp, floating>, "sin.out", &copy_kernel>());
  m.impl("cos.out", structured_out<&shapes::cos, &unary_out_cuda<CosOp, floating>, "cos.out", &copy_kernel>());
  m.impl("tanh.out", structured_out<&shapes::tanh, &unary_out_cuda<TanhOp, floating>, "tanh.out", &copy_kernel>());
  m.impl("sigmoid.out",
         structured_out<&shapes::sigmoid, &unary_out_cuda<SigmoidOp, floating>, "sigmoid.out", &copy_kernel>());
  m.impl("silu.out", structured_out<&shapes::silu, &unary_out_cuda<SiluOp, floating>, "silu.out", &copy_kernel>());
  m.impl("gelu.out", structured_out<&shapes::gelu, &gelu_out_cuda, "gelu.out", &copy_kernel>());
  m.impl("clamp.out", structured_out<&shapes::clamp, &clamp_out_cuda, "clamp.out", &copy_kernel>());
}

}  // namespace strata
