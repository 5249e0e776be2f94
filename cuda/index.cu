// CUDA kernels of ops/index.cpp: index_select (and .out), index_add, gather, scatter_add.
// (masked_fill is cuda/masked_fill.cu's; the views need no kernel.) Shape functions are
// ops/shapes/index.h's; index values are checked on the device, see Note [CUDA index checks]
// in scatter.cuh, and duplicate targets accumulate atomically, see Note [Atomic accumulation].
#include <cstdint>
#include <type_traits>

#include <strata/cuda/copy.h>
#include <strata/cuda/dense.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/indexing.h>
#include <strata/cuda/runtime.h>
#include <strata/cuda/scatter.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/op_helpers.h>
#include <strata/ops/shapes/index.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::check_index;
using cuda::detail::DeviceStorage;
using detail::DimLayout;

// Element copies move bits: one kernel per element size serves every dtype.
template <class Fn>
void visit_element_size(int64_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    default: return fn.template operator()<uint64_t>();
  }
}

// Calls fn.template operator()<I>() with the index dtype (int32 or int64; shapes checked it).
template <class Fn>
void visit_index(const Tensor& index, Fn&& fn) {
  if (index.dtype() == kInt32) fn.template operator()<int32_t>();
  else fn.template operator()<int64_t>();
}

// One index vector (0-d or 1-d, any stride) as the kernels read it.
struct IndexVector {
  const void* data;
  int64_t stride, count;
};

IndexVector index_vector(const Tensor& index) {
  return {index.data_ptr(), index.dim() == 1 ? index.stride(0) : 0, index.numel()};
}

struct Launch {
  cuda::detail::LaunchShape shape;
  cudaStream_t stream;
};

Launch launch_for(const Tensor& t, int64_t count) {
  return {cuda::detail::launch_shape(count), cuda::detail::current_native_stream(t.device().index())};
}

// Grid-stride loops: for (int64_t i = grid_start(); i < count; i += grid_step()).
__device__ __forceinline__ int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------------------------------
// index_select and index_add: rows of `inner` elements around dim, [outer, size, inner].

// Checks the index values alone (the CPU checks them even when there is nothing to copy).
// The op's name must be a device string: index_select's or index_add's.
template <class I>
__global__ void check_indices_kernel(bool index_add, const I* index, IndexVector indices, int64_t dim, int64_t size) {
  const char* op = index_add ? "index_add" : "index_select";
  for (int64_t i = grid_start(); i < indices.count; i += grid_step())
    check_index(op, static_cast<int64_t>(index[i * indices.stride]), dim, size);
}

template <class I>
void check_indices(bool index_add, const Tensor& t, const IndexVector& indices, int64_t dim, int64_t size) {
  if (indices.count == 0) return;
  const Launch launch = launch_for(t, indices.count);
  check_indices_kernel<I><<<launch.shape.blocks, launch.shape.threads, 0, launch.stream>>>(
      index_add, static_cast<const I*>(indices.data), indices, dim, size);
  cuda::detail::check_cuda(cudaGetLastError(), index_add ? "index_add" : "index_select");
}

// out (contiguous [outer, count, inner]) = input (contiguous [outer, size, inner]) at the indices.
template <class E, class I>
__global__ void index_select_kernel(E* out, const E* input, const I* index, IndexVector indices, DimLayout layout,
                                    int64_t dim, int64_t total) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t inner = e % layout.inner, row = e / layout.inner;
    const int64_t i = row % indices.count, outer = row / indices.count;
    const int64_t value = static_cast<int64_t>(index[i * indices.stride]);
    check_index("index_select", value, dim, layout.size);
    out[e] = input[(outer * layout.size + value) * layout.inner + inner];
  }
}

// Fills a contiguous out that does not share self's storage; any other out gets a contiguous
// result copied in, as on the CPU.
void index_select_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  if (!out.is_contiguous() || cuda::detail::shares_storage(out, self)) {
    const Tensor result = detail::make_empty(out.sizes(), out.dtype(), out.device());
    index_select_out_cuda(result, self, dim, index);
    cuda::detail::copy_kernel(out, result);
    return;
  }
  const int64_t d = wrap_dim(dim, self.dim(), "index_select");
  const DimLayout layout = detail::layout_around(self.sizes(), d);
  const IndexVector indices = index_vector(index);
  cuda::detail::DeviceScope scope(out.device().index());
  visit_index(index, [&]<class I>() {
    if (out.numel() == 0) return check_indices<I>(false, out, indices, d, layout.size);
    const Tensor input = cuda::detail::dense(self);
    const Launch launch = launch_for(out, out.numel());
    visit_element_size(out.element_size(), [&]<class E>() {
      index_select_kernel<E, I><<<launch.shape.blocks, launch.shape.threads, 0, launch.stream>>>(
          static_cast<E*>(out.data_ptr()), static_cast<const E*>(input.data_ptr()),
          static_cast<const I*>(indices.data), indices, layout, d, out.numel());
    });
    cuda::detail::check_cuda(cudaGetLastError(), "index_select");
  });
}

// out[outer, index[i], inner] += scale * source[outer, i, inner], atomically (duplicates add).
template <class T, class I>
__global__ void index_add_kernel(typename DeviceStorage<T>::type* out, const typename DeviceStorage<T>::type* source,
                                 const I* index, IndexVector indices, DimLayout layout, int64_t dim, int64_t total,
                                 compute_type_t<T> scale) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t inner = e % layout.inner, row = e / layout.inner;
    const int64_t i = row % indices.count, outer = row / indices.count;
    const int64_t value = static_cast<int64_t>(index[i * indices.stride]);
    check_index("index_add", value, dim, layout.size);
    const auto addend = cuda::detail::device_wrapping_mul(scale, cuda::detail::load<T>(source, e));
    cuda::detail::atomic_accumulate<T>(out + (outer * layout.size + value) * layout.inner + inner, addend);
  }
}

// out = self, then the scaled source rows added at the indices. out is fresh and contiguous
// (no in-place or out= variant), but a strided one would be handled through a temporary.
void index_add_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        const Scalar& alpha) {
  if (!out.is_contiguous()) {
    const Tensor result = detail::make_empty(out.sizes(), out.dtype(), out.device());
    index_add_out_cuda(result, self, dim, index, source, alpha);
    cuda::detail::copy_kernel(out, result);
    return;
  }
  const int64_t d = wrap_dim(dim, self.dim(), "index_add");
  cuda::detail::copy_kernel(out, self);
  const DimLayout layout = detail::layout_around(self.sizes(), d);
  const IndexVector indices = index_vector(index);
  cuda::detail::DeviceScope scope(out.device().index());
  visit_dtype(out.dtype(), [&]<class T>() {
    using S = typename DeviceStorage<T>::type;
    const compute_type_t<T> scale = detail::checked_scalar<T>(alpha, "index_add");
    visit_index(index, [&]<class I>() {
      if (source.numel() == 0) return check_indices<I>(true, out, indices, d, layout.size);
      const Tensor input = cuda::detail::dense(source);
      const Launch launch = launch_for(out, input.numel());
      index_add_kernel<T, I><<<launch.shape.blocks, launch.shape.threads, 0, launch.stream>>>(
          static_cast<S*>(out.data_ptr()), static_cast<const S*>(input.data_ptr()),
          static_cast<const I*>(indices.data), indices, layout, d, input.numel(), scale);
      cuda::detail::check_cuda(cudaGetLastError(), "index_add");
    });
  });
}

// ---------------------------------------------------------------------------------------
// gather and scatter_add. See Note [Gather geometry] in ops/index.cpp: every position p of
// index; self's element is p with its dim coordinate replaced by index[p]; the other operand
// (gather's out, scatter_add's src) is read or written at p itself.

struct GatherWalk {
  cuda::detail::StridedIndexer<3> positions;  // offsets of self (0 along dim), index, other
  int64_t dim = 0, dim_stride = 0, dim_size = 1, count = 0;
};

GatherWalk gather_walk(const char* op, const Tensor& self, int64_t d, const Tensor& index, const Tensor& other) {
  GatherWalk walk;
  const int64_t ndim = std::max<int64_t>(index.dim(), 1);
  STRATA_CHECK(ndim <= cuda::detail::kMaxDims, "[", op, "] CUDA kernels take at most ", cuda::detail::kMaxDims,
               " dimensions, got ", ndim);
  const auto at = [](IntArrayRef values, int64_t k) { return values.empty() ? int64_t{1} : values[k]; };
  walk.positions.ndim = static_cast<int>(ndim);
  for (int64_t k = 0; k < ndim; ++k) {
    walk.positions.sizes[k] = at(index.sizes(), k);
    walk.positions.strides[0][k] = k == d ? 0 : at(self.strides(), k);
    walk.positions.strides[1][k] = at(index.strides(), k);
    walk.positions.strides[2][k] = at(other.strides(), k);
  }
  walk.dim = d;
  walk.dim_stride = at(self.strides(), d);
  walk.dim_size = self.dim() == 0 ? 1 : self.sizes()[d];
  walk.count = index.numel();
  return walk;
}

template <class E>
__global__ void gather_kernel(E* out, const E* self, const int64_t* index, GatherWalk walk) {
  for (int64_t p = grid_start(); p < walk.count; p += grid_step()) {
    int64_t offsets[3];
    walk.positions.offsets(p, offsets);
    const int64_t value = index[offsets[1]];
    check_index("gather", value, walk.dim, walk.dim_size);
    out[offsets[2]] = self[offsets[0] + value * walk.dim_stride];
  }
}

void gather_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  (void)sparse_grad;  // gradients are always dense here
  if (out.numel() == 0) return;
  const int64_t d = wrap_dim(dim, self.dim(), "gather");
  const GatherWalk walk = gather_walk("gather", self, d, index, out);
  cuda::detail::DeviceScope scope(out.device().index());
  const Launch launch = launch_for(out, walk.count);
  visit_element_size(out.element_size(), [&]<class E>() {
    gather_kernel<E><<<launch.shape.blocks, launch.shape.threads, 0, launch.stream>>>(
        static_cast<E*>(out.data_ptr()), static_cast<const E*>(self.data_ptr()),
        static_cast<const int64_t*>(index.data_ptr()), walk);
  });
  cuda::detail::check_cuda(cudaGetLastError(), "gather");
}

template <class T>
__global__ void scatter_add_kernel(typename DeviceStorage<T>::type* out, const typename DeviceStorage<T>::type* src,
                                   const int64_t* index, GatherWalk walk) {
  for (int64_t p = grid_start(); p < walk.count; p += grid_step()) {
    int64_t offsets[3];
    walk.positions.offsets(p, offsets);
    const int64_t value = index[offsets[1]];
    check_index("scatter_add", value, walk.dim, walk.dim_size);
    cuda::detail::atomic_accumulate<T>(out + offsets[0] + value * walk.dim_stride, cuda::detail::load<T>(src, offsets[2]));
  }
}

// out = self, then src added at the indexed positions (atomically: positions that differ only
// along dim may hit one element).
void scatter_add_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = wrap_dim(dim, self.dim(), "scatter_add");
  cuda::detail::copy_kernel(out, self);
  if (index.numel() == 0) return;
  const GatherWalk walk = gather_walk("scatter_add", out, d, index, src);
  cuda::detail::DeviceScope scope(out.device().index());
  const Launch launch = launch_for(out, walk.count);
  visit_dtype(out.dtype(), [&]<class T>() {
    using S = typename DeviceStorage<T>::type;
    scatter_add_kernel<T><<<launch.shape.blocks, launch.shape.threads, 0, launch.stream>>>(
        static_cast<S*>(out.data_ptr()), static_cast<const S*>(src.data_ptr()),
        static_cast<const int64_t*>(index.data_ptr()), walk);
  });
  cuda::detail::check_cuda(cudaGetLastError(), "scatter_add");
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured, detail::structured_out;
  m.impl("index_select", structured<&shapes::index_select, &index_select_out_cuda>());
  m.impl("index_select.out",
         structured_out<&shapes::index_select, &index_select_out_cuda, "index_select.out", &cuda::detail::copy_kernel>());
  m.impl("index_add", structured<&shapes::index_add, &index_add_out_cuda>());
  m.impl("gather", structured<&shapes::gather, &gather_out_cuda>());
  m.impl("scatter_add", structured<&shapes::scatter_add, &scatter_add_out_cuda>());
}

}  // namespace strata
