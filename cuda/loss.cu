// CUDA kernels of ops/loss.cpp: nll_loss_forward, nll_loss_backward and
// binary_cross_entropy_with_logits (nll_loss, cross_entropy_loss and mse_loss are composites
// and need none). Shape functions are ops/shapes/loss.h's; reductions are deterministic
// (cuda/reduce.cuh, no atomics) and accumulate in double as the CPU does.
#include <strata/cuda/copy.h>
#include <strata/cuda/index_check.cuh>
#include <strata/cuda/reduce.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/loss.h>
#include <strata/ops/shapes/reduce.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::dense_as;
using cuda::detail::dense_destination;
using cuda::detail::load;
using cuda::detail::store;
using cuda::detail::write_back;

// ---------------------------------------------------------------------------------------
// nll_loss. See Note [nll_loss shapes] in ops/shapes/loss.h. Targets are checked on the device
// (Note [CUDA index checks] in index_check.cuh).

struct LossTotals {
  double loss, weight;
};
struct LossTotalsSum {
  __device__ LossTotals identity() const { return {0.0, 0.0}; }
  __device__ LossTotals combine(const LossTotals& a, const LossTotals& b) const {
    return {a.loss + b.loss, a.weight + b.weight};
  }
};

// The forward pass is one block: it writes each position's loss (reduction None) and reduces
// the sum of losses and of weights for output and total_weight.
inline constexpr unsigned kNllThreads = 512;

template <class T>
__global__ void __launch_bounds__(kNllThreads)
    nll_loss_forward_kernel(const void* input, const int64_t* target, const double* weights, void* losses, void* output,
                            void* total_weight, int64_t batch, int64_t classes, int64_t inner, int64_t reduction,
                            int64_t ignore_index) {
  LossTotals totals{0.0, 0.0};
  for (int64_t position = threadIdx.x; position < batch * inner; position += blockDim.x) {
    const int64_t t = target[position], n = position / inner, i = position % inner;
    double loss = 0;
    if (t != ignore_index) {
      cuda::detail::check_index("nll_loss", t, 1, classes);
      const double w = weights ? weights[t] : 1.0;
      loss = -w * static_cast<double>(load<T>(input, (n * classes + t) * inner + i));
      totals.weight += w;
    }
    if (losses) store<T>(losses, position, loss);
    totals.loss += loss;
  }
  totals = cuda::detail::block_all_reduce(LossTotalsSum{}, totals);
  if (threadIdx.x != 0) return;
  store<T>(total_weight, 0, totals.weight);
  if (reduction != 0) store<T>(output, 0, reduction == 1 ? totals.loss / totals.weight : totals.loss);
}

// Class weights as a dense float64 tensor (undefined without a weight), as the CPU reads them.
Tensor class_weights(const std::optional<Tensor>& weight) {
  return weight && weight->defined() ? dense_as(*weight, kFloat64) : Tensor();
}

void nll_loss_forward_out_cuda(const Tensor& output, const Tensor& total_weight, const Tensor& self,
                               const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                               int64_t ignore_index) {
  const shapes::NllGeometry shape = shapes::nll_loss_geometry(self, target, weight, reduction);
  const Tensor input = dense_as(self, self.dtype()), targets = dense_as(target, kInt64);
  const Tensor weights = class_weights(weight);
  const Tensor losses = reduction == 0 ? dense_destination(output, output.dtype()) : Tensor();
  const bool any = shape.batch * shape.inner > 0;
  const int device = self.device().index();
  cuda::detail::DeviceScope scope(device);
  visit_dtype(self.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>)
      nll_loss_forward_kernel<T><<<1, kNllThreads, 0, cuda::detail::current_native_stream(device)>>>(
          any && input.numel() > 0 ? input.data_ptr() : nullptr, any ? targets.data_ptr<int64_t>() : nullptr,
          weights.defined() ? weights.data_ptr<double>() : nullptr,
          losses.defined() && any ? losses.data_ptr() : nullptr, reduction == 0 ? nullptr : output.data_ptr(),
          total_weight.data_ptr(), shape.batch, shape.classes, shape.inner, reduction, ignore_index);
  });
  cuda::detail::check_cuda(cudaGetLastError(), "nll_loss_forward");
  if (losses.defined()) write_back(output, losses);
}

// grad_input[n, t, i] = -w[t] * grad (/ total_weight for Mean); zero elsewhere and where
// ignored. total_weight is read on the device.
template <class T>
__global__ void nll_loss_backward_kernel(const double* grad, const int64_t* target, const double* weights,
                                         const double* total_weight, void* grad_input, int64_t batch, int64_t classes,
                                         int64_t inner, int64_t reduction, int64_t ignore_index) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const double scale = reduction == 1 ? 1.0 / *total_weight : 1.0;
  for (int64_t position = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; position < batch * inner;
       position += step) {
    const int64_t t = target[position], n = position / inner, i = position % inner;
    if (t == ignore_index) continue;
    cuda::detail::check_index("nll_loss_backward", t, 1, classes);
    const double upstream = reduction == 0 ? grad[position] : grad[0];
    store<T>(grad_input, (n * classes + t) * inner + i, -(weights ? weights[t] : 1.0) * upstream * scale);
  }
}

void nll_loss_backward_out_cuda(const Tensor& grad_input, const Tensor& grad, const Tensor& self, const Tensor& target,
                                const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                const Tensor& total_weight) {
  const shapes::NllGeometry shape = shapes::nll_loss_geometry(self, target, weight, reduction);
  if (grad_input.numel() == 0) return;
  const Tensor result = dense_destination(grad_input, grad_input.dtype());
  const int device = grad_input.device().index();
  cuda::detail::DeviceScope scope(device);
  const cudaStream_t stream = cuda::detail::current_native_stream(device);
  cuda::detail::check_cuda(cudaMemsetAsync(result.data_ptr(), 0, static_cast<size_t>(result.nbytes()), stream),
                           "nll_loss_backward");
  const int64_t positions = shape.batch * shape.inner;
  if (positions > 0) {
    const Tensor grads = dense_as(grad, kFloat64), targets = dense_as(target, kInt64);
    const Tensor weights = class_weights(weight), total = dense_as(total_weight, kFloat64);
    const cuda::detail::LaunchShape launch = cuda::detail::launch_shape(positions);
    visit_dtype(self.dtype(), [&]<class T>() {
      if constexpr (std::is_floating_point_v<compute_type_t<T>>)
        nll_loss_backward_kernel<T><<<static_cast<unsigned>(launch.blocks), launch.threads, 0, stream>>>(
            grads.data_ptr<double>(), targets.data_ptr<int64_t>(),
            weights.defined() ? weights.data_ptr<double>() : nullptr, total.data_ptr<double>(), result.data_ptr(),
            shape.batch, shape.classes, shape.inner, reduction, ignore_index);
    });
    cuda::detail::check_cuda(cudaGetLastError(), "nll_loss_backward");
  }
  write_back(grad_input, result);
}

// ---------------------------------------------------------------------------------------
// binary_cross_entropy_with_logits. See Note [Stable binary cross entropy with logits] in
// ops/loss.cpp: w * ((1 - t) * x - l * log_sigmoid(x)), l = 1 + (pos_weight - 1) * t,
// computed in float (double for double). Sum and Mean reduce the losses in double.

// Absent weight and pos_weight are passed as x (any tensor of the input's shape) and ignored.
struct BceLoss {
  bool has_weight, has_pos_weight;
  template <class C>
  __device__ C operator()(C x, C t, C w, C p) const {
    const C magnitude = x < C(0) ? -x : x;
    const C log_sigmoid = (C(0) < x ? C(0) : x) - cuda::detail::log1p_of(cuda::detail::exp_of(-magnitude));
    const C scale = has_pos_weight ? C(1) + (p - C(1)) * t : C(1);
    const C loss = (C(1) - t) * x - scale * log_sigmoid;
    return has_weight ? loss * w : loss;
  }
};

void bce_out_cuda(const Tensor& output, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& pos_weight, int64_t reduction) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  if (reduction == 0 && output.numel() == 0) return;
  const ScalarType compute = output.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const bool has_weight = weight && weight->defined(), has_pos_weight = pos_weight && pos_weight->defined();
  const Tensor x = cuda::detail::converted(self, compute), t = cuda::detail::converted(target, compute);
  const Tensor w = has_weight ? cuda::detail::converted(*weight, compute) : x;
  const Tensor p = has_pos_weight ? cuda::detail::converted(*pos_weight, compute) : x;
  const BceLoss loss{has_weight, has_pos_weight};
  visit_dtype(output.dtype(), [&]<class Out>() {
    using C = compute_type_t<Out>;
    if constexpr (std::is_floating_point_v<C>) {
      if (reduction == 0) {
        cuda::detail::launch_elementwise<Out, C, C, C, C>(op, loss, output, x, t, w, p);
        return;
      }
      const Tensor losses = strata::detail::make_empty(self.sizes(), compute, self.device());
      cuda::detail::launch_elementwise<C, C, C, C, C>(op, loss, losses, x, t, w, p);
      const shapes::ReduceShape all = shapes::reduce_shape(op, losses, std::nullopt, false, compute);
      const cuda::detail::ReducePlan plan = cuda::detail::plan_reduction(op, losses, all, {&output, &output});
      const double divisor = reduction == 1 ? static_cast<double>(losses.numel()) : 1.0;
      cuda::detail::launch_reduce(op, plan, losses,
                                  cuda::detail::ArithmeticOps<C, Out, double, false>{output.data_ptr(), divisor},
                                  output.device().index());
    }
  });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("nll_loss_forward", structured<&shapes::nll_loss_forward, &nll_loss_forward_out_cuda>());
  m.impl("nll_loss_backward", structured<&shapes::nll_loss_backward, &nll_loss_backward_out_cuda>());
  m.impl("binary_cross_entropy_with_logits", structured<&shapes::binary_cross_entropy_with_logits, &bce_out_cuda>());
}

}  // namespace strata
