// CUDA kernels of ops/shape.cpp: copy_ (same device, and the way across devices), clone, cat.
// Shape functions and checks are ops/shapes/shape.h's; views need no kernel.
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/copy.h>
#include <strata/ops/shapes/shape.h>
#include <strata/ops/structured.h>

namespace strata {
namespace cuda::detail {

struct Identity {
  template <class C>
  __device__ C operator()(C value) const {
    return value;
  }
};

void copy_kernel(const Tensor& dst, const Tensor& src) {
  visit_dtype(dst.dtype(), [&]<class Out>() {
    visit_dtype(src.dtype(), [&]<class In>() { launch_elementwise<Out, In>("copy_", Identity{}, dst, src); });
  });
}

Tensor converted(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = strata::detail::make_empty(t.sizes(), dtype, t.device());
  copy_kernel(out, t);
  return out;
}

}  // namespace cuda::detail

namespace {

Tensor copy_cuda(const Tensor& self, const Tensor& src, bool non_blocking) {
  static constexpr auto checks = detail::structured_in_place<&shapes::copy_, nullptr, "copy_", nullptr>();
  checks(self, src, non_blocking);
  if (src.device() != self.device()) detail::copy_across_devices(self, src, non_blocking);
  else cuda::detail::copy_kernel(self, src);
  return self;
}

void clone_out_cuda(const Tensor& out, const Tensor& self, std::optional<MemoryFormat>) {
  cuda::detail::copy_kernel(out, self);
}

void cat_out_cuda(const Tensor& out, const tensor_list& tensors, int64_t dim) {
  if (out.numel() == 0) return;
  const int64_t cat_dim = shapes::cat_dim(tensors, dim);
  DimVector sizes(out.sizes());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (shapes::skipped_in_cat(t)) continue;
    sizes[cat_dim] = t.sizes()[cat_dim];
    if (t.numel() > 0)
      cuda::detail::copy_kernel(
          detail::make_view(out, sizes, out.strides(), out.storage_offset() + offset * out.strides()[cat_dim]), t);
    offset += sizes[cat_dim];
  }
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured, detail::structured_out;
  m.impl("copy_", &copy_cuda);
  m.impl("clone", structured<&shapes::clone, &clone_out_cuda>());
  m.impl("cat", structured<&shapes::cat, &cat_out_cuda>());
  m.impl("cat.out", structured_out<&shapes::cat, &cat_out_cuda, "cat.out", &cuda::detail::copy_kernel>());
}

}  // namespace strata
