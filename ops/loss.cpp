// Losses: nll_loss (nll_loss_forward / nll_loss_backward), cross_entropy (cross_entropy_loss,
// class-index and class-probability targets, label smoothing), mse_loss, and
// binary_cross_entropy_with_logits. The shape functions are in shapes/loss.h and the Meta
// kernels derive from them (Note [Structured ops]).
#include <Eigen/Core>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/eigen_math.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/lane_sum.h>
#include <strata/ops/op_helpers.h>
#include <strata/ops/shapes/loss.h>
#include <strata/ops/structured.h>

#include <algorithm>
#include <cmath>

namespace strata {
namespace {

using shapes::check_reduction;

// ---------------------------------------------------------------------------------------
// nll_loss: CPU kernels. See Note [nll_loss shapes].

// Class weights as doubles (all 1 without a weight tensor).
std::vector<double> class_weights(const std::optional<Tensor>& weight, int64_t classes) {
  if (!weight || !weight->defined()) return std::vector<double>(static_cast<size_t>(classes), 1.0);
  const Tensor values = detail::cast_to(*weight, kFloat64);
  const double* data = detail::data_of<double>(values);
  return std::vector<double>(data, data + classes);
}

int64_t checked_class(int64_t t, int64_t classes) {
  STRATA_CHECK_INDEX(t >= 0 && t < classes, "[nll_loss] target ", t, " is out of bounds for ", classes, " classes");
  return t;
}

void nll_loss_forward_out_cpu(const Tensor& output, const Tensor& total_weight, const Tensor& self,
                              const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                              int64_t ignore_index) {
  const shapes::NllGeometry shape = shapes::nll_loss_geometry(self, target, weight, reduction);
  const std::vector<double> weights = class_weights(weight, shape.classes);
  const Tensor input = detail::as_contiguous(self), targets = detail::as_contiguous(target);
  const Tensor losses = reduction == 0 ? detail::as_contiguous(output) : output;  // 0-d: always dense
  const int64_t* t = detail::data_of<int64_t>(targets);
  visit_dtype(self.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      const T* x = detail::data_of<T>(input);
      T* each = reduction == 0 ? detail::data_of<T>(losses) : nullptr;
      double sum = 0, weight_sum = 0;
      for (int64_t n = 0; n < shape.batch; ++n) {
        for (int64_t i = 0; i < shape.inner; ++i) {
          const int64_t position = n * shape.inner + i;
          double loss = 0;
          if (t[position] != ignore_index) {
            const int64_t c = checked_class(t[position], shape.classes);
            const double w = weights[static_cast<size_t>(c)];
            loss = -w * static_cast<double>(x[(n * shape.classes + c) * shape.inner + i]);
            weight_sum += w;
          }
          if (each) each[position] = static_cast<T>(loss);
          sum += loss;
        }
      }
      *detail::data_of<T>(total_weight) = static_cast<T>(weight_sum);
      if (reduction != 0) *detail::data_of<T>(output) = static_cast<T>(reduction == 1 ? sum / weight_sum : sum);
    }
  });
  if (!losses.is_same(output)) detail::copy_kernel(output, losses);
}

// grad_input[n, t, i] = -w[t] * grad (/ total_weight for Mean); zero elsewhere and where ignored.
void nll_loss_backward_out_cpu(const Tensor& grad_input, const Tensor& grad, const Tensor& self, const Tensor& target,
                               const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const Tensor& total_weight) {
  const shapes::NllGeometry shape = shapes::nll_loss_geometry(self, target, weight, reduction);
  const Tensor result = grad_input.is_contiguous()
                            ? grad_input
                            : detail::make_empty(grad_input.sizes(), grad_input.dtype(), grad_input.device());
  detail::fill_kernel(result, 0, "nll_loss_backward");
  const std::vector<double> weights = class_weights(weight, shape.classes);
  const Tensor grads = detail::cast_to(grad, kFloat64), targets = detail::as_contiguous(target);
  const double* g = detail::data_of<double>(grads);
  const int64_t* t = detail::data_of<int64_t>(targets);
  const double scale = reduction == 1 ? 1.0 / detail::read_scalar(total_weight).to_double() : 1.0;
  visit_dtype(self.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      T* out = detail::data_of<T>(result);
      for (int64_t position = 0; position < shape.batch * shape.inner; ++position) {
        if (t[position] == ignore_index) continue;
        const int64_t c = checked_class(t[position], shape.classes), n = position / shape.inner,
                      i = position % shape.inner;
        const double upstream = reduction == 0 ? g[position] : g[0];
        out[(n * shape.classes + c) * shape.inner + i] =
            static_cast<T>(-weights[static_cast<size_t>(c)] * upstream * scale);
      }
    }
  });
  if (!result.is_same(grad_input)) detail::copy_kernel(grad_input, result);
}

std::tuple<Tensor, Tensor> call_nll_loss_forward(const Tensor& self, const Tensor& target,
                                                 const std::optional<Tensor>& weight, int64_t reduction,
                                                 int64_t ignore_index) {
  static const auto op = find_op("strata::nll_loss_forward")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&,
                                                               const std::optional<Tensor>&, int64_t, int64_t)>();
  return op.call(self, target, weight, reduction, ignore_index);
}

Tensor call_nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                              const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                              const Tensor& total_weight) {
  static const auto op = find_op("strata::nll_loss_backward")
                             .typed<Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                           int64_t, int64_t, const Tensor&)>();
  return op.call(grad, self, target, weight, reduction, ignore_index, total_weight);
}


// ---------------------------------------------------------------------------------------
// binary_cross_entropy_with_logits.

// Note [Stable binary cross entropy with logits]
// With l = 1 + (pos_weight - 1) * t (1 without pos_weight) the loss per element is
//   w * ((1 - t) * x - l * log_sigmoid(x)),   log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)),
// which never exponentiates a positive number, so logits of any size are safe. target has
// the input's shape; weight and pos_weight broadcast to it. The result dtype promotes all.

// t broadcast to `sizes`, converted to `dtype` and contiguous; undefined stays undefined.
Tensor dense_as(const std::optional<Tensor>& t, IntArrayRef sizes, ScalarType dtype) {
  if (!t || !t->defined()) return Tensor();
  const DimVector strides = detail::broadcast_strides(sizes, *t);
  return detail::cast_to(detail::make_view(*t, sizes, strides, t->storage_offset()), dtype);
}

void bce_out_cpu(const Tensor& output, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                 const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const ScalarType dtype = output.dtype();
  const ScalarType compute = dtype == kFloat64 ? kFloat64 : kFloat32;
  const Tensor x = dense_as(self, self.sizes(), compute), t = dense_as(target, self.sizes(), compute);
  const Tensor w = dense_as(weight, self.sizes(), compute), p = dense_as(pos_weight, self.sizes(), compute);
  const bool direct = reduction == 0 && dtype == compute && output.is_contiguous();
  const Tensor losses = direct ? output : detail::make_empty(self.sizes(), compute, self.device());
  double total = 0;
  visit_dtype(compute, [&]<class C>() {
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
      const C *xs = detail::data_of<C>(x), *ts = detail::data_of<C>(t);
      const C* ws = w.defined() ? detail::data_of<C>(w) : nullptr;
      const C* ps = p.defined() ? detail::data_of<C>(p) : nullptr;
      C* out = detail::data_of<C>(losses);
      // In chunks of Eigen array expressions (vectorised exp and log1p), summed in double lanes.
      using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
      constexpr int64_t kChunk = 1024;
      for (int64_t start = 0; start < self.numel(); start += kChunk) {
        const int64_t n = std::min(kChunk, self.numel() - start);
        const Eigen::Map<const Array> xv(xs + start, n), tv(ts + start, n);
        Eigen::Map<Array> loss(out + start, n);
        const auto log_sig = xv.min(C(0)) - detail::full_range_exp(-xv.abs()).log1p();
        if (ps) loss = (C(1) - tv) * xv - (C(1) + (Eigen::Map<const Array>(ps + start, n) - C(1)) * tv) * log_sig;
        else loss = (C(1) - tv) * xv - log_sig;
        if (ws) loss *= Eigen::Map<const Array>(ws + start, n);
        total += detail::lane_sum(out + start, n, [](auto v) { return v; });
      }
    }
  });
  if (reduction == 0) {
    if (!losses.is_same(output)) detail::copy_kernel(output, losses);
  } else {
    const double value = reduction == 1 ? total / static_cast<double>(self.numel()) : total;
    detail::fill_kernel(output, value, "binary_cross_entropy_with_logits");
  }
}

Tensor call_bce(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& pos_weight, int64_t reduction) {
  static const auto op = find_op("strata::binary_cross_entropy_with_logits")
                             .typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                           const std::optional<Tensor>&, int64_t)>();
  return op.call(self, target, weight, pos_weight, reduction);
}

// ---------------------------------------------------------------------------------------
// Composites.

Tensor nll_loss_composite(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index) {
  return std::get<0>(call_nll_loss_forward(self, target, weight, reduction, ignore_index));
}

Tensor reduce_loss(const Tensor& losses, int64_t reduction) {
  if (reduction == 0) return losses;
  Tensor total = sum(losses);
  return reduction == 1 ? total / static_cast<double>(losses.numel()) : total;
}

// A weight of shape [C] viewed to broadcast along the class dim of an input of `ndim` dims.
Tensor class_weight_view(const Tensor& weight, int64_t ndim, int64_t class_dim) {
  std::vector<int64_t> sizes(static_cast<size_t>(ndim), 1);
  sizes[static_cast<size_t>(class_dim)] = weight.numel();
  return weight.view(sizes);
}

// Note [Cross entropy with class probabilities]
// A floating target of the input's shape holds class probabilities. Label smoothing mixes
// them with the uniform distribution, target * (1 - s) + s / C; the loss per sample is
// -sum_c w_c * target_c * log_softmax(x)_c, and Mean divides the sum by the number of
// samples (input.numel() / C), not by any weight, as in PyTorch.
Tensor cross_entropy_probabilities(const Tensor& log_probs, const Tensor& target, const std::optional<Tensor>& weight,
                                   int64_t reduction, double label_smoothing, int64_t class_dim) {
  STRATA_CHECK_VALUE(target.sizes() == log_probs.sizes(), "[cross_entropy] a floating-point target holds class "
                     "probabilities and must have the input's shape ", log_probs.sizes(), ", got ", target.sizes());
  const int64_t classes = log_probs.sizes()[class_dim];
  STRATA_CHECK_VALUE(!weight || !weight->defined() || (weight->dim() == 1 && weight->numel() == classes),
                     "[cross_entropy] expected a weight of shape [", classes, "] (one per class), got weight of shape ",
                     weight && weight->defined() ? weight->sizes() : IntArrayRef());
  Tensor probabilities = label_smoothing > 0 ? target * (1.0 - label_smoothing) + label_smoothing / classes : target;
  Tensor terms = log_probs * probabilities;
  if (weight && weight->defined()) terms = terms * class_weight_view(*weight, log_probs.dim(), class_dim);
  if (reduction == 0) return -terms.sum({class_dim});
  Tensor total = -terms.sum();
  return reduction == 1 ? total / static_cast<double>(log_probs.numel() / std::max<int64_t>(classes, 1)) : total;
}

// Note [cross_entropy errors]
// cross_entropy checks its class-index targets (shape, range, weight) through nll_loss_forward,
// whose errors say "[nll_loss]". The user called cross_entropy, so the message is renamed to
// start with "[cross_entropy]", keeping its Error subclass.
template <class E>
[[noreturn]] void rethrow_as_cross_entropy(const E& error) {
  constexpr std::string_view nll = "[nll_loss]";
  std::string_view message = error.what();
  if (!message.starts_with(nll)) throw error;
  message.remove_prefix(nll.size());
  throw E(detail::str_cat("[cross_entropy]", message));
}

std::tuple<Tensor, Tensor> cross_entropy_nll(const Tensor& log_probs, const Tensor& target,
                                             const std::optional<Tensor>& weight, int64_t reduction,
                                             int64_t ignore_index) {
  try {
    return call_nll_loss_forward(log_probs, target, weight, reduction, ignore_index);
  } catch (const IndexError& error) {
    rethrow_as_cross_entropy(error);
  } catch (const TypeError& error) {
    rethrow_as_cross_entropy(error);
  } catch (const ValueError& error) {
    rethrow_as_cross_entropy(error);
  }
}

// Note [Label smoothing]
// With class-index targets, PyTorch defines
//   loss = (1 - s) * nll_loss(log_softmax(x), target) + (s / C) * smooth,
//   smooth_n = -sum_c w_c * log_softmax(x)_{n,c}  (0 where target_n == ignore_index),
// reduced like nll_loss: Mean divides the sum of smooth_n by the total weight of the kept
// targets (nll_loss_forward's second output), Sum adds, None keeps per-sample values.
Tensor cross_entropy_composite(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                               int64_t reduction, int64_t ignore_index, double label_smoothing) {
  check_reduction("cross_entropy", reduction);
  STRATA_CHECK_VALUE(self.dim() >= 1, "[cross_entropy] expected an input with at least 1 dimension, got a 0-d tensor");
  STRATA_CHECK_VALUE(label_smoothing >= 0.0 && label_smoothing <= 1.0,
                     "[cross_entropy] label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const Tensor log_probs = log_softmax(self, class_dim);
  if (is_floating_point(target.dtype()))
    return cross_entropy_probabilities(log_probs, target, weight, reduction, label_smoothing, class_dim);
  auto [nll, total_weight] = cross_entropy_nll(log_probs, target, weight, reduction, ignore_index);
  if (label_smoothing == 0.0) return nll;
  const bool weighted = weight && weight->defined();
  Tensor smooth = -(weighted ? log_probs * class_weight_view(*weight, self.dim(), class_dim) : log_probs).sum({class_dim});
  smooth = smooth.masked_fill(eq(target, ignore_index), 0.0);
  Tensor reduced = reduction == 0 ? smooth : reduction == 2 ? sum(smooth) : sum(smooth) / total_weight;
  return nll * (1.0 - label_smoothing) + reduced * (label_smoothing / static_cast<double>(self.sizes()[class_dim]));
}

// mean((self - target)^2) with broadcasting and type promotion.
Tensor mse_loss_composite(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction("mse_loss", reduction);
  STRATA_CHECK_TYPE(is_floating_point(self.dtype()) && is_floating_point(target.dtype()),
                    "[mse_loss] expected floating-point input and target, got ", self.dtype(), " and ", target.dtype());
  (void)broadcast_shapes(self.sizes(), target.sizes(), "mse_loss");  // names mse_loss in the error
  const Tensor difference = self - target;
  return reduce_loss(difference * difference, reduction);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured;
  def_structured<&shapes::nll_loss_forward>(m, "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, "
                                               "int reduction, SymInt ignore_index) "
                                               "-> (Tensor output, Tensor total_weight)");
  def_structured<&shapes::nll_loss_backward>(m, "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
                                                "Tensor? weight, int reduction, SymInt ignore_index, "
                                                "Tensor total_weight) -> Tensor");
  m.def("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) "
        "-> Tensor",
        &nll_loss_composite);
  m.def("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
        "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
        &cross_entropy_composite);
  m.def("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor", &mse_loss_composite);
  def_structured<&shapes::binary_cross_entropy_with_logits>(
      m, "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, "
         "int reduction=Mean) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("nll_loss_forward", structured<&shapes::nll_loss_forward, &nll_loss_forward_out_cpu>());
  m.impl("nll_loss_backward", structured<&shapes::nll_loss_backward, &nll_loss_backward_out_cpu>());
  m.impl("binary_cross_entropy_with_logits",
         structured<&shapes::binary_cross_entropy_with_logits, &bce_out_cpu>());
}

// ---------------------------------------------------------------------------------------
// Derivatives. See Note [Optional tensors in Functions] in op_helpers.h for the lambdas.

namespace {
using autograd::AutogradContext;

struct NllLossFunction : autograd::Function<NllLossFunction> {
  static constexpr std::string_view name() { return "NllLossBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& self, const Tensor& target, const Tensor& weight,
                             int64_t reduction, int64_t ignore_index) {
    STRATA_CHECK_NOT_IMPLEMENTED(!ctx->needs_input_grad(2), "[nll_loss] the derivative for 'weight' is not implemented");
    auto [output, total_weight] =
        call_nll_loss_forward(self, target, detail::as_optional(weight), reduction, ignore_index);
    ctx->save_for_backward({self, target, weight, total_weight});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->mark_non_differentiable({total_weight});
    return {output, total_weight};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    return autograd::detail::gradients_in(
        std::move(grads),
        call_nll_loss_backward(grads[0], saved[0], saved[1], detail::as_optional(saved[2]),
                               ctx->saved_data["reduction"].to_int(), ctx->saved_data["ignore_index"].to_int(),
                               saved[3]),
        Tensor(), Tensor(), Tensor(), Tensor());
  }
};

// nll_loss_backward is linear in grad_output: its own derivative is nll_loss of the incoming
// gradient with the same target, weight and reduction (and zero for self).
struct NllLossBackwardFunction : autograd::Function<NllLossBackwardFunction> {
  static constexpr std::string_view name() { return "NllLossBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad, const Tensor& self, const Tensor& target,
                        const Tensor& weight, int64_t reduction, int64_t ignore_index, const Tensor& total_weight) {
    ctx->save_for_backward({target, weight});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    return call_nll_loss_backward(grad, self, target, detail::as_optional(weight), reduction, ignore_index,
                                  total_weight);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    Tensor grad_grad = nll_loss(grads[0], saved[0], detail::as_optional(saved[1]),
                                static_cast<Reduction>(ctx->saved_data["reduction"].to_int()),
                                ctx->saved_data["ignore_index"].to_int());
    return autograd::detail::gradients_in(std::move(grads), grad_grad, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
                                          Tensor());
  }
};

// The backward is written in differentiable ops (sigmoid, log, exp, clamp), so it works
// under create_graph; see Note [Stable binary cross entropy with logits]:
//   d/dx = w * (l * sigmoid(x) - p * t)           d/dt = -w * ((p - 1) * log_sigmoid(x) + x)
//   d/dw = the unweighted loss                     d/dp = -w * t * log_sigmoid(x)
struct BinaryCrossEntropyWithLogitsFunction : autograd::Function<BinaryCrossEntropyWithLogitsFunction> {
  static constexpr std::string_view name() { return "BinaryCrossEntropyWithLogitsBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& target, const Tensor& weight,
                        const Tensor& pos_weight, int64_t reduction) {
    ctx->save_for_backward({self, target, weight, pos_weight});
    ctx->saved_data["reduction"] = reduction;
    return call_bce(self, target, detail::as_optional(weight), detail::as_optional(pos_weight), reduction);
  }
  static Tensor log_sigmoid_of(const Tensor& x) { return clamp(x, std::nullopt, 0) - log(exp(-abs(x)) + 1.0); }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor &x = saved[0], &t = saved[1], &w = saved[2], &p = saved[3];
    const int64_t reduction = ctx->saved_data["reduction"].to_int();
    Tensor g = reduction == 1 ? grads[0] / static_cast<double>(x.numel()) : grads[0];
    if (reduction != 0) g = g.expand(x.sizes());
    const Tensor gw = w.defined() ? g * w : g;
    tensor_list result(5);
    if (ctx->needs_input_grad(0))
      result[0] = gw * (p.defined() ? ((p - 1.0) * t + 1.0) * sigmoid(x) - p * t : sigmoid(x) - t);
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(3)) {
      const Tensor log_sig = log_sigmoid_of(x);
      if (ctx->needs_input_grad(1)) result[1] = -(gw * (p.defined() ? (p - 1.0) * log_sig + x : x));
      if (ctx->needs_input_grad(3)) result[3] = -(gw * t * log_sig);
    }
    if (ctx->needs_input_grad(2)) result[2] = g * call_bce(x, t, std::nullopt, detail::as_optional(p), 0);
    return result;
  }
};

std::tuple<Tensor, Tensor> nll_loss_forward_autograd(const Tensor& self, const Tensor& target,
                                                     const std::optional<Tensor>& weight, int64_t reduction,
                                                     int64_t ignore_index) {
  return detail::to_tuple2(
      NllLossFunction::apply_op(self, target, detail::value_or_undefined(weight), reduction, ignore_index));
}

Tensor nll_loss_backward_autograd(const Tensor& grad, const Tensor& self, const Tensor& target,
                                  const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                  const Tensor& total_weight) {
  return NllLossBackwardFunction::apply_op(grad, self, target, detail::value_or_undefined(weight), reduction,
                                        ignore_index, total_weight);
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("nll_loss_forward", &nll_loss_forward_autograd);
  m.impl("nll_loss_backward", &nll_loss_backward_autograd);
  m.impl("binary_cross_entropy_with_logits",
         [](const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
            const std::optional<Tensor>& pos_weight, int64_t reduction) {
           return BinaryCrossEntropyWithLogitsFunction::apply_op(self, target, detail::value_or_undefined(weight),
                                                              detail::value_or_undefined(pos_weight), reduction);
         });
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, Reduction reduction,
                int64_t ignore_index) {
  static const auto op = find_op("strata::nll_loss")
                             .typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t)>();
  return op.call(self, target, weight, static_cast<int64_t>(reduction), ignore_index);
}
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  static const auto op = find_op("strata::cross_entropy_loss")
                             .typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t,
                                           double)>();
  return op.call(self, target, weight, static_cast<int64_t>(reduction), ignore_index, label_smoothing);
}
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, Reduction reduction) {
  return call_bce(self, target, weight, pos_weight, static_cast<int64_t>(reduction));
}
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction reduction) {
  static const auto op = find_op("strata::mse_loss").typed<Tensor(const Tensor&, const Tensor&, int64_t)>();
  return op.call(self, target, static_cast<int64_t>(reduction));
}

}  // namespace strata
