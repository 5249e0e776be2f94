// Fused optimizer updates: _fused_sgd_ and _fused_adam_ (declared in ops/optim.h). Each applies
// one torch.optim step to one parameter in a single pass over its elements; their `.list`
// overloads apply it to a list of parameters in one call (Note [Multi-tensor optimizer steps]).
//
// Note [Fused optimizer steps]
// An optimizer step written with tensor ops (mul_, add_, sqrt, addcdiv_...) reads and writes the
// parameter and its state several times and allocates temporaries; the fused ops read each
// element of param, grad and state once, compute the whole update in registers and write back.
// They follow PyTorch's single-tensor formulas operation by operation (in the dtype's compute
// type: float for float32, float16 and bfloat16; double for float64), so the results match
// torch.optim. Scalars (lr, bias corrections) are computed in double, as Python does, and then
// rounded to the compute type. Rounding follows ATen's vectorised CPU kernels, which run nearly
// every element: `add(a, b, alpha)` and `lerp` are fused multiply-adds (vec::fmadd, one
// rounding), `addcmul` is self + (value * t1) * t2 with its last multiply-add fused by the
// compiler (GCC contracts by default), and `addcdiv` is self + (value * t1) / t2, unfused.
// So this file spells each fused multiply-add with std::fma and is built with -ffp-contract=off
// (CMakeLists.txt), so that no other a * b + c gets fused behind our back. Checked bit for bit
// against LibTorch 1.13's CPU kernels running torch.optim's single-tensor SGD, Adam and AdamW
// (float32, AVX2/AVX-512 machine).
// The ops return nothing: they are updates in place, and have no derivative (the Autograd
// kernel runs them below Autograd after the in-place check).
#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/optim.h>
#include <strata/ops/shapes/optim.h>
#include <strata/ops/structured.h>
#include <strata/tensor/parallel.h>

#include <array>
#include <cmath>

namespace strata {
namespace {

struct SgdArguments {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, is_first_step;
};

struct AdamArguments {
  int64_t step;
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled_weight_decay;
};


// Whether the defined `tensors` lay out one block each in one shared order (all contiguous,
// or all channels last...): then element i of every block is the same logical element.
template <size_t N>
bool one_dense_layout(const std::array<Tensor, N>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (first == nullptr) first = &t;
    else if (t.sizes() != first->sizes() || t.strides() != first->strides()) return false;
  }
  return first == nullptr || first->is_contiguous() || first->is_non_overlapping_and_dense();
}

// Runs fn on `tensors` as they are when they share one dense layout (a channels-last parameter
// with its gradient and state), else on contiguous versions, copying the written ones back, so
// the element loops only see dense memory in one order.
template <size_t N, class Fn>
void with_contiguous(const std::array<Tensor, N>& tensors, const Fn& fn) {
  if (one_dense_layout(tensors)) {
    fn(tensors);
    return;
  }
  std::array<Tensor, N> dense;
  for (size_t i = 0; i < N; ++i)
    dense[i] = !tensors[i].defined() || tensors[i].is_contiguous() ? tensors[i] : detail::as_contiguous(tensors[i]);
  fn(dense);
  for (size_t i = 0; i < N; ++i)
    if (tensors[i].defined() && !dense[i].is_same(tensors[i])) detail::copy_kernel(tensors[i], dense[i]);
}

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? detail::data_of<T>(t) : nullptr;
}

template <class Fn>
void visit_floating(ScalarType dtype, const Fn& fn) {
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>)
      fn.template operator()<T>();
  });
}

// The constants of one SGD step in the compute type, passed by value so that the element loop
// keeps them in registers (a store through param could otherwise alias them). Flags become
// exact factors (grad_sign) or selects between computed values, so the loop has no branches and
// vectorises; momentum's extra store is a template parameter.
template <class C>
struct SgdConstants {
  C lr, momentum, keep, weight_decay, grad_sign;
  bool use_weight_decay, nesterov, is_first_step;
};

template <class T, class C, bool Momentum>
void sgd_range(T* __restrict param, const T* __restrict grad, T* __restrict buffer, int64_t begin, int64_t end,
               const SgdConstants<C> k) {
  for (int64_t i = begin; i < end; ++i) {
    const C p = static_cast<C>(param[i]);
    const C g = static_cast<C>(grad[i]) * k.grad_sign;
    const C g_decayed = std::fma(k.weight_decay, p, g);  // grad.add(param, alpha=weight_decay)
    C d = k.use_weight_decay ? g_decayed : g;
    if constexpr (Momentum) {
      // The first buffer is d itself; then buf.mul_(momentum).add_(d, alpha=1 - dampening).
      const C b_next = std::fma(k.keep, d, static_cast<C>(buffer[i]) * k.momentum);
      const C b = k.is_first_step ? d : b_next;
      buffer[i] = static_cast<T>(b);
      const C d_nesterov = std::fma(k.momentum, b, d);  // d.add(buf, alpha=momentum)
      d = k.nesterov ? d_nesterov : b;
    }
    param[i] = static_cast<T>(std::fma(-k.lr, d, p));  // param.add_(d, alpha=-lr)
  }
}

template <class T>
void sgd_loop(T* param, const T* grad, T* buffer, int64_t n, const SgdArguments& args) {
  using C = compute_type_t<T>;
  const SgdConstants<C> constants{static_cast<C>(args.lr),
                                  static_cast<C>(args.momentum),
                                  static_cast<C>(1 - args.dampening),
                                  static_cast<C>(args.weight_decay),
                                  args.maximize ? C(-1) : C(1),
                                  args.weight_decay != 0,
                                  args.nesterov,
                                  args.is_first_step};
  const bool momentum = args.momentum != 0;
  parallel_for(0, n, kDefaultGrainSize, [=](int64_t begin, int64_t end) {
    if (momentum) sgd_range<T, C, true>(param, grad, buffer, begin, end, constants);
    else sgd_range<T, C, false>(param, grad, buffer, begin, end, constants);
  });
}

// One parameter's step; buffer is undefined without momentum.
void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdArguments& args) {
  with_contiguous<3>({param, grad, buffer}, [&](const std::array<Tensor, 3>& t) {
    visit_floating(param.dtype(), [&]<class T>() {
      sgd_loop<T>(detail::data_of<T>(t[0]), detail::data_of<T>(t[1]), data_or_null<T>(t[2]), param.numel(), args);
    });
  });
}

void fused_sgd_cpu(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer, double lr,
                   double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                   bool is_first_step) {
  const SgdArguments args{lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step};
  sgd_step(param, grad, momentum != 0 ? *momentum_buffer : Tensor(), args);
}

// The scalars of one Adam step, computed in double as torch.optim does in Python.
struct AdamScalars {
  double step_size, bias_correction2_sqrt, param_scale;
};

AdamScalars adam_scalars(const AdamArguments& args) {
  const double step = static_cast<double>(args.step);
  const double bias_correction1 = 1 - std::pow(args.beta1, step);
  const double bias_correction2 = 1 - std::pow(args.beta2, step);
  return {args.lr / bias_correction1, std::sqrt(bias_correction2), 1 - args.lr * args.weight_decay};
}

// As SgdConstants, for one Adam step.
template <class C>
struct AdamConstants {
  C lerp_coeff, beta2, one_minus_beta2, weight_decay, eps, step_size, bias_correction2_sqrt, param_scale, grad_sign;
  bool small_weight, l2_weight_decay, amsgrad;
};

// Flags become exact factors (a sign, a scale of 1) or selects between two computed values, so
// the loop stays free of branches and vectorises; amsgrad's extra store is a template parameter.
template <class T, class C, bool Amsgrad>
void adam_range(T* __restrict param, const T* __restrict grad, T* __restrict exp_avg, T* __restrict exp_avg_sq,
                T* __restrict max_exp_avg_sq, int64_t begin, int64_t end, const AdamConstants<C> k) {
  for (int64_t i = begin; i < end; ++i) {
    const C p_old = static_cast<C>(param[i]);
    const C g_raw = static_cast<C>(grad[i]);
    const C g_signed = g_raw * k.grad_sign;  // -1 when maximizing: exact
    const C p = p_old * k.param_scale;        // 1 unless AdamW's decay: exact
    const C g_decayed = std::fma(k.weight_decay, p, g_signed);  // computed always, then selected
    const C g = k.l2_weight_decay ? g_decayed : g_signed;
    const C m_old = static_cast<C>(exp_avg[i]);  // exp_avg.lerp_(g, 1 - beta1)
    const C m = std::fma(k.lerp_coeff, g - m_old, k.small_weight ? m_old : g);  // ATen's lerp_vec
    // exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2); see Note [Fused optimizer steps]
    C v = std::fma(k.one_minus_beta2 * g, g, static_cast<C>(exp_avg_sq[i]) * k.beta2);
    exp_avg[i] = static_cast<T>(m);
    exp_avg_sq[i] = static_cast<T>(v);
    if constexpr (Amsgrad) {
      v = std::max(static_cast<C>(max_exp_avg_sq[i]), v);
      max_exp_avg_sq[i] = static_cast<T>(v);
    }
    const C denom = std::sqrt(v) / k.bias_correction2_sqrt + k.eps;
    param[i] = static_cast<T>(p + (-k.step_size) * m / denom);  // param.addcdiv_(m, denom, value=-step_size)
  }
}

template <class T>
void adam_loop(const std::array<T*, 5>& data, int64_t n, const AdamArguments& args) {
  using C = compute_type_t<T>;
  const AdamScalars scalars = adam_scalars(args);
  const C weight = static_cast<C>(1 - args.beta1);
  const bool small_weight = std::abs(weight) < C(0.5);  // PyTorch's two-sided lerp
  const AdamConstants<C> constants{small_weight ? weight : weight - 1,
                                   static_cast<C>(args.beta2),
                                   static_cast<C>(1 - args.beta2),
                                   static_cast<C>(args.weight_decay),
                                   static_cast<C>(args.eps),
                                   static_cast<C>(scalars.step_size),
                                   static_cast<C>(scalars.bias_correction2_sqrt),
                                   args.decoupled_weight_decay ? static_cast<C>(scalars.param_scale) : C(1),
                                   args.maximize ? C(-1) : C(1),
                                   small_weight,
                                   args.weight_decay != 0 && !args.decoupled_weight_decay,
                                   args.amsgrad};
  parallel_for(0, n, kDefaultGrainSize, [=](int64_t begin, int64_t end) {
    if (constants.amsgrad) adam_range<T, C, true>(data[0], data[1], data[2], data[3], data[4], begin, end, constants);
    else adam_range<T, C, false>(data[0], data[1], data[2], data[3], data[4], begin, end, constants);
  });
}

// One parameter's step; max_exp_avg_sq is undefined without amsgrad.
void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const AdamArguments& args) {
  with_contiguous<5>({param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq}, [&](const std::array<Tensor, 5>& t) {
    visit_floating(param.dtype(), [&]<class T>() {
      adam_loop<T>({detail::data_of<T>(t[0]), detail::data_of<T>(t[1]), detail::data_of<T>(t[2]),
                    detail::data_of<T>(t[3]), data_or_null<T>(t[4])},
                   param.numel(), args);
    });
  });
}

void fused_adam_cpu(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                    const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                    double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  const AdamArguments args{step, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay};
  adam_step(param, grad, exp_avg, exp_avg_sq, amsgrad ? *max_exp_avg_sq : Tensor(), args);
}

// Note [Multi-tensor optimizer steps]
// An optimizer step over N parameters as N calls of _fused_sgd_ / _fused_adam_ pays N
// dispatches, and on CUDA N kernel launches of mostly tiny tensors. The list overloads
// (_fused_sgd_.list, _fused_adam_.list, like PyTorch's _fused_adam_(Tensor(a!)[] self, ...))
// take a whole group of parameters: one dispatch, one check of every entry before anything is
// written, and on CUDA one multi-tensor launch plan per dtype (Note [Multi-tensor launches] in
// cuda/optim_step.h). Entry i gets exactly the per-tensor step, so results are bit-identical to
// N per-tensor calls. Adam's step counts differ between parameters (one added late starts at 1),
// so they travel as an int list, read on the host from the CPU `step` tensors as before: no
// device sync. An optional state list (momentum_buffers without momentum, max_exp_avg_sqs
// without amsgrad) is ignored and may be empty, as in PyTorch. The entries are assumed not to
// share memory with each other (each parameter appears once), as for PyTorch's fused steps.
void fused_sgd_list_cpu(const tensor_list& params, const tensor_list& grads, const tensor_list& momentum_buffers,
                        double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                        bool maximize, bool is_first_step) {
  const SgdArguments args{lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step};
  static const Tensor none;
  for (size_t i = 0; i < params.size(); ++i)
    sgd_step(params[i], grads[i], momentum != 0 ? momentum_buffers[i] : none, args);
}

void fused_adam_list_cpu(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                         const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs, IntArrayRef steps,
                         double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                         bool maximize, bool decoupled_weight_decay) {
  static const Tensor none;
  for (size_t i = 0; i < params.size(); ++i) {
    const AdamArguments args{steps[i], lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay};
    adam_step(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], amsgrad ? max_exp_avg_sqs[i] : none, args);
  }
}

// Updates have no derivative: run the backend kernel (the dispatcher has refused leaves that
// require grad, as for every in-place op). See Note [Fused optimizer steps].
void fused_sgd_autograd(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer,
                        double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                        bool maximize, bool is_first_step) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  _fused_sgd_(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
}

void fused_adam_autograd(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                         const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1,
                         double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                         bool decoupled_weight_decay) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  _fused_adam_(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, weight_decay, eps, amsgrad,
               maximize, decoupled_weight_decay);
}

void fused_sgd_list_autograd(const tensor_list& params, const tensor_list& grads, const tensor_list& momentum_buffers,
                             double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                             bool maximize, bool is_first_step) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  _fused_sgd_(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov, maximize,
              is_first_step);
}

void fused_adam_list_autograd(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                              const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs, IntArrayRef steps,
                              double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                              bool maximize, bool decoupled_weight_decay) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  _fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps,
               amsgrad, maximize, decoupled_weight_decay);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  detail::def_checked_update<&shapes::_fused_sgd_in_place>(
      m, "_fused_sgd_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, *, float lr, float momentum, "
         "float dampening, float weight_decay, bool nesterov, bool maximize, bool is_first_step) -> ()");
  detail::def_checked_update<&shapes::_fused_adam_in_place>(
      m, "_fused_adam_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "
         "Tensor(d!)? max_exp_avg_sq, *, int step, float lr, float beta1, float beta2, float weight_decay, float eps, "
         "bool amsgrad, bool maximize, bool decoupled_weight_decay) -> ()");
  // See Note [Multi-tensor optimizer steps].
  detail::def_checked_update<&shapes::_fused_sgd_list_in_place>(
      m, "_fused_sgd_.list(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] momentum_buffers, *, float lr, "
         "float momentum, float dampening, float weight_decay, bool nesterov, bool maximize, bool is_first_step) -> ()");
  detail::def_checked_update<&shapes::_fused_adam_list_in_place>(
      m, "_fused_adam_.list(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
         "Tensor(d!)[] max_exp_avg_sqs, *, int[] steps, float lr, float beta1, float beta2, float weight_decay, "
         "float eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) -> ()");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("_fused_sgd_", detail::checked_update<&shapes::_fused_sgd_in_place, &fused_sgd_cpu>());
  m.impl("_fused_adam_", detail::checked_update<&shapes::_fused_adam_in_place, &fused_adam_cpu>());
  m.impl("_fused_sgd_.list", detail::checked_update<&shapes::_fused_sgd_list_in_place, &fused_sgd_list_cpu>());
  m.impl("_fused_adam_.list", detail::checked_update<&shapes::_fused_adam_list_in_place, &fused_adam_list_cpu>());
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("_fused_sgd_", &fused_sgd_autograd);
  m.impl("_fused_adam_", &fused_adam_autograd);
  m.impl("_fused_sgd_.list", &fused_sgd_list_autograd);
  m.impl("_fused_adam_.list", &fused_adam_list_autograd);
}

// ---------------------------------------------------------------------------------------
// Free functions.

void _fused_sgd_(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step) {
  static const auto op = find_op("strata::_fused_sgd_")
                             .typed<void(const Tensor&, const Tensor&, const std::optional<Tensor>&, double, double,
                                         double, double, bool, bool, bool)>();
  op.call(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
}

void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  static const auto op = find_op("strata::_fused_adam_")
                             .typed<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                         const std::optional<Tensor>&, int64_t, double, double, double, double,
                                         double, bool, bool, bool)>();
  op.call(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, weight_decay, eps, amsgrad,
          maximize, decoupled_weight_decay);
}

void _fused_sgd_(const tensor_list& params, const tensor_list& grads, const tensor_list& momentum_buffers, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step) {
  static const auto op = find_op("strata::_fused_sgd_.list")
                             .typed<void(const tensor_list&, const tensor_list&, const tensor_list&, double, double,
                                         double, double, bool, bool, bool)>();
  op.call(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
}

void _fused_adam_(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                  const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs, IntArrayRef steps, double lr,
                  double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                  bool decoupled_weight_decay) {
  static const auto op = find_op("strata::_fused_adam_.list")
                             .typed<void(const tensor_list&, const tensor_list&, const tensor_list&,
                                         const tensor_list&, const tensor_list&, IntArrayRef, double, double, double,
                                         double, double, bool, bool, bool)>();
  op.call(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps, amsgrad,
          maximize, decoupled_weight_decay);
}

}  // namespace strata
