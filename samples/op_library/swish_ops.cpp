// The op library that samples/custom_op_library.cpp loads at run time: built as its own .so
// (libstrata_sample_swish_ops.so), it holds nothing but STRATA_LIBRARY blocks. Loading it with
// load_library() registers `myops::swish` with CPU, Meta and Autograd kernels; destroying the
// LibraryHandle unregisters them all and closes the .so.
#include <strata/strata.h>

#include <cmath>

using namespace strata;

namespace {

// swish(x) = x * sigmoid(beta * x), one pass over the data (float32 and float64).
template <class T>
void swish_loop(const T* in, T* out, int64_t count, T beta) {
  parallel_for(0, count, 32768, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = in[i] / (T(1) + std::exp(-beta * in[i]));
  });
}

Tensor swish_cpu(const Tensor& x, double beta) {
  STRATA_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64,
               "[myops::swish] expected a float32 or float64 tensor, got ", x.dtype());
  Tensor input = x.contiguous();
  Tensor out = empty(input.sizes(), input.dtype());
  if (input.dtype() == kFloat32)
    swish_loop(input.data_ptr<float>(), out.data_ptr<float>(), input.numel(), static_cast<float>(beta));
  else
    swish_loop(input.data_ptr<double>(), out.data_ptr<double>(), input.numel(), beta);
  return out;
}

Tensor swish_meta(const Tensor& x, double) {
  STRATA_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64,
               "[myops::swish] expected a float32 or float64 tensor, got ", x.dtype());
  return empty(x.sizes(), TensorOptions(x.dtype()).device(kMeta));
}

// The derivative: s + beta * y * (1 - s), with s = sigmoid(beta * x) and y = swish(x).
struct SwishFunction : autograd::Function<SwishFunction> {
  static constexpr const char* name() { return "SwishBackward"; }
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double beta) {
    Tensor y = swish_cpu(x, beta);
    ctx->save_for_backward({x, y});
    ctx->saved_data["beta"] = beta;
    return y;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    const double beta = ctx->saved_data["beta"].to_double();
    Tensor s = sigmoid(saved[0] * beta);
    return {grad_outputs[0] * (s + saved[1] * (1.0 - s) * beta), Tensor()};
  }
};

}  // namespace

STRATA_LIBRARY(myops, m) { m.def("swish(Tensor x, float beta=1.0) -> Tensor"); }
STRATA_LIBRARY_IMPL(myops, CPU, m) { m.impl("swish", swish_cpu); }
STRATA_LIBRARY_IMPL(myops, Meta, m) { m.impl("swish", swish_meta); }
STRATA_LIBRARY_IMPL(myops, Autograd, m) { m.impl("swish", autograd::kernel<SwishFunction>()); }
