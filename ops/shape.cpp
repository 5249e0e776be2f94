// Shape ops and copies: view, reshape, flatten, transpose, permute, expand, squeeze,
// unsqueeze, split_with_sizes / split / chunk (views share storage and so the version
// counter), cat (and cat.out) and stack, contiguous, clone, copy_, and _to_copy behind
// Tensor::to. The shape functions of cat and clone are in shapes/shape.h.
#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/copy.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/shapes/shape.h>
#include <strata/ops/structured.h>
#include <strata/tensor/device_hooks.h>

#include <optional>
#include <vector>

namespace strata {
namespace {
using ToCopySignature = Tensor(const Tensor&, std::optional<ScalarType>, std::optional<Layout>, std::optional<Device>,
                               std::optional<bool>, bool, std::optional<MemoryFormat>);
const TypedOperatorHandle<ToCopySignature>& to_copy_op() {
  static const auto op = find_op("strata::_to_copy").typed<ToCopySignature>();
  return op;
}

// ---------------------------------------------------------------------------------------
// Shape functions.

// Resolves one -1 in `sizes` against numel; checks the element count.
DimVector infer_size(const char* op, IntArrayRef sizes, int64_t numel) {
  DimVector result(sizes);
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == -1) {
      STRATA_CHECK_VALUE(!inferred, "[", op, "] only one dimension can be inferred, got shape ", sizes);
      inferred = d;
    } else {
      STRATA_CHECK_VALUE(sizes[d] >= 0, "[", op, "] invalid shape dimension ", sizes[d], " in shape ", sizes);
      known *= sizes[d];
    }
  }
  if (inferred) {
    STRATA_CHECK_VALUE(known != 0, "[", op, "] cannot infer the -1 dimension of shape ", sizes,
                       " for input of size ", numel);
    STRATA_CHECK_VALUE(numel % known == 0, "[", op, "] shape ", sizes, " is invalid for input of size ", numel);
    result[*inferred] = numel / known;
  } else {
    STRATA_CHECK_VALUE(known == numel, "[", op, "] shape ", sizes, " is invalid for input of size ", numel);
  }
  return result;
}

// Note [View strides]
// PyTorch's computeStride: a view of new sizes exists when every run of old dimensions that
// is contiguous in memory ("chunk") maps onto a run of new dimensions with the same element
// count; the new strides are then derived inside each chunk from the chunk's base stride.
// Returns nullopt when some new dimension would span two chunks (reshape then copies).
std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides, IntArrayRef new_sizes) {
  const int64_t new_ndim = static_cast<int64_t>(new_sizes.size());
  DimVector new_strides(new_sizes.size(), 1);
  if (old_sizes.empty()) return new_strides;
  int64_t numel = 1;
  for (int64_t size : old_sizes) numel *= size;
  if (numel == 0) {
    if (old_sizes == new_sizes) return DimVector(old_strides);
    for (int64_t d = new_ndim - 2; d >= 0; --d) new_strides[d] = std::max<int64_t>(new_sizes[d + 1], 1) * new_strides[d + 1];
    return new_strides;
  }
  int64_t view_d = new_ndim - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    const bool chunk_ends = tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                                              old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
      new_strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_sizes[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

// ---------------------------------------------------------------------------------------
// View kernels: metadata only, so one CompositeExplicitAutograd kernel serves every backend.

Tensor view_kernel(const Tensor& self, IntArrayRef size) {
  const DimVector sizes = infer_size("view", size, self.numel());
  const std::optional<DimVector> strides = view_strides(self.sizes(), self.strides(), sizes);
  STRATA_CHECK(strides.has_value(), "[view] view size ", sizes.ref(), " is not compatible with input tensor's size ",
               self.sizes(), " and stride ", self.strides(),
               " (at least one dimension spans across two contiguous subspaces); use reshape instead");
  return detail::make_view(self, sizes, *strides, self.storage_offset());
}

Tensor transpose_kernel(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t ndim = std::max<int64_t>(self.dim(), 1);
  const int64_t a = wrap_dim(dim0, ndim, "transpose"), b = wrap_dim(dim1, ndim, "transpose");
  if (self.dim() == 0) return detail::make_view(self, self.sizes(), self.strides(), self.storage_offset());
  DimVector sizes(self.sizes()), strides(self.strides());
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor permute_kernel(const Tensor& self, IntArrayRef dims) {
  const int64_t ndim = self.dim();
  STRATA_CHECK_VALUE(static_cast<int64_t>(dims.size()) == ndim, "[permute] number of dims don't match: got ",
                     dims.size(), " dims ", dims, " for a tensor of dimension ", ndim);
  DimVector sizes(dims.size()), strides(dims.size());
  DimVector seen(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], ndim, "permute");
    STRATA_CHECK_VALUE(!seen[d], "[permute] dim ", dims[i], " appears more than once in ", dims);
    seen[d] = 1;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor expand_kernel(const Tensor& self, IntArrayRef size, bool implicit) {
  (void)implicit;  // only matters to tracing tools in PyTorch
  const int64_t ndim = self.dim(), new_ndim = static_cast<int64_t>(size.size());
  STRATA_CHECK_VALUE(new_ndim >= ndim, "[expand] the number of sizes provided (", new_ndim,
                     ") must be greater or equal to the number of dimensions in the tensor (", ndim, ")");
  DimVector sizes(size.size()), strides(size.size());
  for (int64_t i = new_ndim - 1; i >= 0; --i) {
    const int64_t d = i - (new_ndim - ndim);  // matching dim of self, or negative for a new one
    const int64_t target = size[i];
    if (d < 0) {
      STRATA_CHECK_VALUE(target >= 0, "[expand] the expanded size ", target,
                         " is not allowed in a leading, non-existing dimension ", i, " (target sizes ", size, ")");
      sizes[i] = target;
      strides[i] = 0;
      continue;
    }
    const int64_t current = self.sizes()[d];
    if (target == -1 || target == current) {
      sizes[i] = current;
      strides[i] = self.strides()[d];
    } else {
      STRATA_CHECK_VALUE(current == 1 && target >= 0, "[expand] the expanded size of the tensor (", target,
                         ") must match the existing size (", current, ") at non-singleton dimension ", i,
                         ". Target sizes: ", size, ". Tensor sizes: ", self.sizes());
      sizes[i] = target;
      strides[i] = 0;
    }
  }
  checked_numel(sizes, "expand");  // a view of more elements than int64 counts
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze_kernel(const Tensor& self) {
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

// A dim whose size is not 1 is left alone, as in PyTorch.
Tensor squeeze_dim_kernel(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, self.dim(), "squeeze");
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() > 0 && sizes[d] == 1) {
    sizes.erase(static_cast<size_t>(d));
    strides.erase(static_cast<size_t>(d));
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze_kernel(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t stride = d >= self.dim() ? 1 : sizes[d] * strides[d];
  sizes.insert(static_cast<size_t>(d), 1);
  strides.insert(static_cast<size_t>(d), stride);
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

// Consecutive views along `dim`, one per split size.
tensor_list split_with_sizes_kernel(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  STRATA_CHECK_VALUE(self.dim() > 0, "[split_with_sizes] expected a tensor with at least 1 dimension, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t size : split_sizes) {
    STRATA_CHECK_VALUE(size >= 0, "[split_with_sizes] split_sizes must be non-negative, got ", split_sizes);
    total += size;
  }
  STRATA_CHECK_VALUE(total == self.sizes()[d], "[split_with_sizes] split_sizes ", split_sizes,
                     " must sum exactly to the size of dimension ", d, " of the input of shape ", self.sizes(),
                     " (", self.sizes()[d], "), but they sum to ", total);
  tensor_list pieces;
  pieces.reserve(split_sizes.size());
  DimVector sizes(self.sizes());
  int64_t offset = self.storage_offset();
  for (int64_t size : split_sizes) {
    sizes[d] = size;
    pieces.push_back(detail::make_view(self, sizes, self.strides(), offset));
    offset += size * self.strides()[d];
  }
  return pieces;
}

// ---------------------------------------------------------------------------------------
// cat: CPU compute (the shape function is shapes::cat). Each kept input is copied into its
// slab of out, which may be strided or a view (cat.out).

void cat_out_cpu(const Tensor& out, const tensor_list& tensors, int64_t dim) {
  if (out.numel() == 0) return;
  const int64_t d = shapes::cat_dim(tensors, dim);
  DimVector sizes(out.sizes());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (shapes::skipped_in_cat(t)) continue;
    sizes[d] = t.sizes()[d];
    if (t.numel() > 0)
      detail::copy_kernel(
          detail::make_view(out, sizes, out.strides(), out.storage_offset() + offset * out.strides()[d]), t);
    offset += sizes[d];
  }
}

// ---------------------------------------------------------------------------------------
// Composites.

Tensor reshape_composite(const Tensor& self, IntArrayRef shape) {
  const DimVector sizes = infer_size("reshape", shape, self.numel());
  if (view_strides(self.sizes(), self.strides(), sizes)) return view(self, sizes);
  Tensor copy = view(clone(self, MemoryFormat::Contiguous), sizes);
  copy.impl()->set_view_base({});  // a copy is nobody's view (PyTorch's _unsafe_view)
  return copy;
}

Tensor contiguous_composite(const Tensor& self, MemoryFormat memory_format) {
  detail::check_memory_format(memory_format, self.dim(), "contiguous");
  return detail::is_contiguous_as(self.sizes(), self.strides(), memory_format) ? self : clone(self, memory_format);
}

// A 0-d tensor flattens to shape [1]; start_dim == end_dim returns self, as in PyTorch.
Tensor flatten_composite(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  const int64_t start = wrap_dim(start_dim, self.dim(), "flatten"), end = wrap_dim(end_dim, self.dim(), "flatten");
  STRATA_CHECK_VALUE(start <= end, "[flatten] start_dim ", start_dim, " cannot come after end_dim ", end_dim,
                     " for an input of shape ", self.sizes());
  if (start == end) return self;
  DimVector sizes;
  for (int64_t d = 0; d < start; ++d) sizes.push_back(self.sizes()[d]);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= self.sizes()[d];
  sizes.push_back(merged);
  for (int64_t d = end + 1; d < self.dim(); ++d) sizes.push_back(self.sizes()[d]);
  return reshape(self, sizes);
}

// PyTorch's split: pieces of split_size along dim, the last one smaller when it does not divide.
tensor_list split_composite(const Tensor& self, int64_t split_size, int64_t dim) {
  STRATA_CHECK_VALUE(self.dim() > 0, "[split] expected a tensor with at least 1 dimension, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "split");
  const int64_t dim_size = self.sizes()[d];
  STRATA_CHECK_VALUE(split_size >= 0, "[split] split_size must be non-negative, got split_size=", split_size);
  STRATA_CHECK_VALUE(split_size > 0 || dim_size == 0, "[split] split_size can only be 0 if the dimension size is 0, "
                     "but dimension ", d, " of the input of shape ", self.sizes(), " has size ", dim_size);
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>((dim_size + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(count), split_size);
  sizes.back() = split_size - (split_size * count - dim_size);
  return split_with_sizes(self, sizes, d);
}

tensor_list chunk_composite(const Tensor& self, int64_t chunks, int64_t dim) {
  STRATA_CHECK_VALUE(self.dim() > 0, "[chunk] expected a tensor with at least 1 dimension, got a 0-d tensor");
  STRATA_CHECK_VALUE(chunks > 0, "[chunk] expected `chunks` to be greater than 0, got ", chunks);
  const int64_t d = wrap_dim(dim, self.dim(), "chunk");
  const int64_t dim_size = self.sizes()[d];
  // ceil(dim_size / chunks) without forming dim_size + chunks, which overflows for huge chunks.
  const int64_t split_size = dim_size / chunks + (dim_size % chunks != 0 ? 1 : 0);
  if (split_size == 0 && dim_size == 0) return split_with_sizes(self, std::vector<int64_t>(chunks, 0), d);
  return split(self, split_size, d);
}

// Unsqueezes every input at dim and concatenates; all inputs must have the same shape.
Tensor stack_composite(const tensor_list& tensors, int64_t dim) {
  STRATA_CHECK_VALUE(!tensors.empty(), "[stack] expected a non-empty list of tensors");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  tensor_list unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    STRATA_CHECK_VALUE(tensors[i].sizes() == tensors[0].sizes(), "[stack] expected each tensor to be equal size, "
                       "but got ", tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    unsqueezed.push_back(unsqueeze(tensors[i], d));
  }
  return cat(unsqueezed, d);
}

// ---------------------------------------------------------------------------------------
// Copies.

void clone_out_cpu(const Tensor& out, const Tensor& self, std::optional<MemoryFormat>) {
  detail::copy_kernel(out, self);
}

// Reached with a CPU self or src (CPU outranks Meta): a Meta self only checks. A src on
// another device (reached when a backend leaves copy_ to the CPU kernel) takes the one
// cross-device path. Same checks as the derived Meta kernel (Note [Structured ops]).
Tensor copy_cpu(const Tensor& self, const Tensor& src, bool non_blocking) {
  static constexpr auto checks = detail::structured_in_place<&shapes::copy_, nullptr, "copy_", nullptr>();
  checks(self, src, non_blocking);
  if (self.is_meta()) return self;
  if (src.device() != self.device()) detail::copy_across_devices(self, src, non_blocking);
  else detail::copy_kernel(self, src);  // CPU copies are synchronous
  return self;
}

Tensor to_copy_cpu(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                   std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking,
                   std::optional<MemoryFormat> memory_format) {
  Tensor out =
      detail::empty_from_meta(shapes::to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format));
  if (out.is_meta()) return out;
  if (out.device() != self.device()) detail::copy_across_devices(out, self, non_blocking);
  else detail::copy_kernel(out, self);
  return out;
}
// Serves every backend without a _to_copy kernel of its own (and a CUDA target with no backend
// loaded, which then gets a clear error): allocate on the target, then the target's copy_.
Tensor to_copy_composite(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                         std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking,
                         std::optional<MemoryFormat> memory_format) {
  Tensor out =
      detail::empty_from_meta(shapes::to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format));
  if (out.is_meta()) return out;
  static const auto copy_op = find_op("strata::copy_").typed<Tensor(const Tensor&, const Tensor&, bool)>();
  copy_op.call(out, self, non_blocking);
  return out;
}

}  // namespace

// Note [Copies between devices]
// Every copy between two devices, whichever kernel the dispatcher reached (the CPU copy_ or
// _to_copy, or a backend's copy_ given a src on another device), runs copy_across_devices.
// Only dense bytes of one dtype and shape cross between devices, moved by the hooks'
// copy_bytes; broadcasting, strides and dtype conversion happen once, on one side, by that
// side's own same-device copy (the CPU copy_kernel, or a dispatched copy_/contiguous on the
// device, which the backend provides anyway):
// - the same dtype, sizes and strides on both sides, dense in some order of dims (contiguous,
//   transposed, channels last: what to() makes by default, Note [Strides of copies]): the
//   bytes of the one block move as they are.
// - device to CPU otherwise: src is made contiguous on its device; its bytes land in dst when
//   dst is contiguous with src's dtype and shape, else in a CPU buffer that copy_kernel
//   converts into dst.
// - CPU to device, device to device otherwise: src is converted on its own side into a
//   contiguous tensor of dst's dtype and shape (unless it is one); its bytes land in dst when
//   dst is contiguous, else in a contiguous temporary on dst's device that dst then copies from.
// non_blocking is passed on only when no CPU buffer of ours takes part: such a buffer is freed
// (or read) as soon as this returns, so its copy must be finished by then.
namespace detail {
namespace {
bool is_dense_like(const Tensor& candidate, const Tensor& target) {
  return candidate.dtype() == target.dtype() && candidate.sizes() == target.sizes() && candidate.is_contiguous();
}

// Whether a and b hold their elements in one dense block each, laid out alike: the same dtype,
// sizes and strides (those of size-1 dims aside), without gaps or shared locations.
bool same_dense_block(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  if (a.is_contiguous() && b.is_contiguous()) return true;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.sizes()[d] != 1 && a.strides()[d] != b.strides()[d]) return false;
  return a.is_non_overlapping_and_dense();
}

// dst and src: one dense block each, laid out alike (same_dense_block), on different devices.
void move_bytes(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Device device = dst.is_cpu() ? src.device() : dst.device();
  const DeviceHooks& hooks = require_device_hooks(device.type(), "copy_");
  const size_t nbytes = static_cast<size_t>(dst.nbytes());
  if (nbytes == 0) return;
  hooks.copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), nbytes, nullptr, non_blocking);
}

void copy_device_to_cpu(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Tensor dense_src = src.is_contiguous() ? src : contiguous(src);
  if (is_dense_like(dst, dense_src)) return move_bytes(dst, dense_src, non_blocking);
  const Tensor host = make_empty(dense_src.sizes(), dense_src.dtype(), Device(kCPU));
  move_bytes(host, dense_src, /*non_blocking=*/false);
  copy_kernel(dst, host);
}

void copy_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  Tensor source = src;
  if (!is_dense_like(src, dst)) {
    source = make_empty(dst.sizes(), dst.dtype(), src.device());
    if (src.is_cpu()) copy_kernel(source, src);
    else copy_(source, src);
    if (src.is_cpu()) non_blocking = false;
  }
  if (dst.is_contiguous()) return move_bytes(dst, source, non_blocking);
  const Tensor staged = make_empty(dst.sizes(), dst.dtype(), dst.device());
  move_bytes(staged, source, non_blocking);
  copy_(dst, staged);
}
}  // namespace

void copy_across_devices(const Tensor& dst, const Tensor& src, bool non_blocking) {
  STRATA_CHECK(!dst.is_meta() && !src.is_meta(), "[copy_] cannot copy from ", src.device(), " to ", dst.device(),
               ": meta tensors have no data");
  STRATA_INTERNAL_ASSERT(dst.device() != src.device(), "copy_across_devices called for one device, ", dst.device());
  STRATA_CHECK(dst.is_cpu() || src.is_cpu() || dst.device().type() == src.device().type(),
               "[copy_] cannot copy from ", src.device(), " to ", dst.device(), " directly; copy through the CPU");
  if (same_dense_block(dst, src))
    move_bytes(dst, src, non_blocking);
  else if (dst.is_cpu())
    copy_device_to_cpu(dst, src, non_blocking);
  else copy_to_device(dst, src, non_blocking);
}
}  // namespace detail

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_in_place, detail::def_structured_out;
  m.def("view(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("expand(Tensor(a) self, int[] size, *, bool implicit=False) -> Tensor(a)");
  m.def("reshape(Tensor(a) self, int[] shape) -> Tensor(a)", &reshape_composite);
  m.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", &flatten_composite);
  m.def("squeeze(Tensor(a) self) -> Tensor(a)");
  m.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  m.def("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", &split_composite);
  m.def("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", &chunk_composite);
  def_structured<&shapes::cat>(m, "cat(Tensor[] tensors, int dim=0) -> Tensor");
  def_structured_out<&shapes::cat, "cat.out">(m, "cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("stack(Tensor[] tensors, int dim=0) -> Tensor", &stack_composite);
  m.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
        &contiguous_composite);
  def_structured<&shapes::clone>(m, "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor");
  def_structured_in_place<&shapes::copy_, "copy_">(m, "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)");
  def_structured<&shapes::to_copy>(m,
                                   "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
                                   "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
                                   "MemoryFormat? memory_format=None) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("view", &view_kernel);
  m.impl("transpose.int", &transpose_kernel);
  m.impl("permute", &permute_kernel);
  m.impl("expand", &expand_kernel);
  m.impl("squeeze", &squeeze_kernel);
  m.impl("squeeze.dim", &squeeze_dim_kernel);
  m.impl("unsqueeze", &unsqueeze_kernel);
  m.impl("split_with_sizes", &split_with_sizes_kernel);
  m.impl("_to_copy", &to_copy_composite);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_out;
  m.impl("clone", structured<&shapes::clone, &clone_out_cpu>());
  m.impl("cat", structured<&shapes::cat, &cat_out_cpu>());
  m.impl("cat.out", structured_out<&shapes::cat, &cat_out_cpu, "cat.out">());
  m.impl("copy_", &copy_cpu);
  m.impl("_to_copy", &to_copy_cpu);
}

// ---------------------------------------------------------------------------------------
// Derivatives: views pass the gradient back through the inverse view; copies pass it through.

namespace {
using autograd::AutogradContext;

struct ViewFunction : autograd::Function<ViewFunction> {
  static constexpr std::string_view name() { return "ViewBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, IntArrayRef size) {
    return view(self, size);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].reshape(ctx->input_sizes(0)), Tensor());
  }
};

struct TransposeFunction : autograd::Function<TransposeFunction> {
  static constexpr std::string_view name() { return "TransposeBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim0, int64_t dim1) {
    ctx->saved_data["dim0"] = dim0;
    ctx->saved_data["dim1"] = dim1;
    return transpose(self, dim0, dim1);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads), grads[0].transpose(ctx->saved_data["dim0"].to_int(), ctx->saved_data["dim1"].to_int()),
        Tensor(), Tensor());
  }
};

struct PermuteFunction : autograd::Function<PermuteFunction> {
  static constexpr std::string_view name() { return "PermuteBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, IntArrayRef dims) {
    Tensor out = permute(self, dims);  // validates dims first
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      inverse[static_cast<size_t>(wrap_dim(dims[i], self.dim(), "permute"))] = static_cast<int64_t>(i);
    ctx->saved_data["inverse"] = std::move(inverse);
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].permute(ctx->saved_data["inverse"].to_int_list()),
                                          Tensor());
  }
};

// The expanded gradient is summed back to self's shape by the Function machinery.
struct ExpandFunction : autograd::Function<ExpandFunction> {
  static constexpr std::string_view name() { return "ExpandBackward"; }
  static Tensor forward(AutogradContext*, const Tensor& self, IntArrayRef size, bool implicit) {
    static const auto op = find_op("strata::expand").typed<Tensor(const Tensor&, IntArrayRef, bool)>();
    return op.call(self, size, implicit);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0], Tensor(), Tensor());
  }
};

struct CloneFunction : autograd::Function<CloneFunction> {
  static constexpr std::string_view name() { return "CloneBackward"; }
  static Tensor forward(AutogradContext*, const Tensor& self, std::optional<MemoryFormat> memory_format) {
    return clone(self, memory_format);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0], Tensor());
  }
};

// self's old values are overwritten, so only src gets a gradient. An integral or bool self
// cannot carry one: copying a src that requires grad into it records nothing, as in PyTorch.
struct CopyFunction : autograd::Function<CopyFunction> {
  static constexpr std::string_view name() { return "CopyBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& src, bool non_blocking) {
    static const auto op = find_op("strata::copy_").typed<Tensor(const Tensor&, const Tensor&, bool)>();
    op.call(self, src, non_blocking);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), Tensor(), grads[0], Tensor());
  }
};

// The gradient goes back to the input's dtype and device (see validate_gradients). A copy to
// an integral or bool dtype carries no gradient, as in PyTorch.
struct ToCopyFunction : autograd::Function<ToCopyFunction> {
  static constexpr std::string_view name() { return "ToCopyBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, std::optional<ScalarType> dtype,
                        std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory,
                        bool non_blocking, std::optional<MemoryFormat> memory_format) {
    return to_copy_op().call(self, dtype, layout, device, pin_memory, non_blocking, memory_format);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0], Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
                                          Tensor());
  }
};

// squeeze and unsqueeze only drop or add size-1 dims: the gradient is reshaped back.
struct SqueezeFunction : autograd::Function<SqueezeFunction> {
  static constexpr std::string_view name() { return "SqueezeBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self) {
    return squeeze(self);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].reshape(ctx->input_sizes(0)));
  }
};

struct SqueezeDimFunction : autograd::Function<SqueezeDimFunction> {
  static constexpr std::string_view name() { return "SqueezeBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, int64_t dim) {
    return squeeze(self, dim);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].reshape(ctx->input_sizes(0)), Tensor());
  }
};

struct UnsqueezeFunction : autograd::Function<UnsqueezeFunction> {
  static constexpr std::string_view name() { return "UnsqueezeBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, int64_t dim) {
    return unsqueeze(self, dim);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].reshape(ctx->input_sizes(0)), Tensor());
  }
};

// The pieces' gradients (zeros for unused pieces) concatenate back into self's.
struct SplitWithSizesFunction : autograd::Function<SplitWithSizesFunction> {
  static constexpr std::string_view name() { return "SplitWithSizesBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
    tensor_list pieces = split_with_sizes(self, split_sizes, dim);
    ctx->saved_data["dim"] = wrap_dim(dim, self.dim(), "split_with_sizes");
    return pieces;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), cat(grads, ctx->saved_data["dim"].to_int()), Tensor(),
                                          Tensor());
  }
};

// Note [cat's backward node]
// autograd::Function records edges only for Tensor arguments (see Note [Optional tensors in
// Functions] in op_helpers.h), and cat takes a Tensor[] of any length, so cat wires
// its own Node: one edge per listed tensor, and a backward that slices the output gradient
// along dim. Skipped legacy empty inputs get no gradient.
class CatBackward final : public autograd::Node {
 public:
  std::string name() const override { return "CatBackward"; }
  tensor_list apply(tensor_list&& grads) override {
    check_not_released();
    const Tensor grad = grads[0].defined() ? grads[0] : output_metadata(0).zeros();
    tensor_list results(inputs.size());
    int64_t offset = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (lengths[i] < 0) continue;
      if (next_edges_[i].valid()) results[i] = narrow(grad, dim, offset, lengths[i]);
      offset += lengths[i];
    }
    return autograd::detail::validate_gradients(*this, std::move(results), inputs, next_edges_);
  }

  autograd::detail::ForwardInputs inputs;
  std::vector<int64_t> lengths;  // per input along dim; -1 for skipped inputs
  int64_t dim = 0;
};

Tensor cat_autograd(const tensor_list& tensors, int64_t dim) {
  static const auto op = find_op("strata::cat").typed<Tensor(const tensor_list&, int64_t)>();
  const bool record = is_grad_enabled() && std::any_of(tensors.begin(), tensors.end(), [](const Tensor& t) {
                        return autograd::detail::requires_grad(t);
                      });
  Tensor out;
  {
    NoGradGuard no_grad;
    out = op.call(tensors, dim);
  }
  if (!record) return out;
  auto node = std::make_shared<CatBackward>();
  node->dim = shapes::cat_dim(tensors, dim);
  for (const Tensor& t : tensors) {
    autograd::detail::collect_input(node->inputs, node->mutable_next_edges(), t);
    node->lengths.push_back(shapes::skipped_in_cat(t) ? -1 : t.sizes()[node->dim]);
  }
  node->add_output_metadata(out);
  autograd::detail::set_history(out, node, 0);
  return out;
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("squeeze", autograd::kernel<SqueezeFunction>());
  m.impl("squeeze.dim", autograd::kernel<SqueezeDimFunction>());
  m.impl("unsqueeze", autograd::kernel<UnsqueezeFunction>());
  m.impl("split_with_sizes", autograd::kernel<SplitWithSizesFunction>());
  m.impl("cat", &cat_autograd);
  m.impl("view", autograd::kernel<ViewFunction>());
  m.impl("transpose.int", autograd::kernel<TransposeFunction>());
  m.impl("permute", autograd::kernel<PermuteFunction>());
  m.impl("expand", autograd::kernel<ExpandFunction>());
  m.impl("clone", autograd::kernel<CloneFunction>());
  m.impl("copy_", autograd::kernel<CopyFunction>());
  m.impl("_to_copy", autograd::kernel<ToCopyFunction>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor view(const Tensor& self, IntArrayRef sizes) {
  static const auto op = find_op("strata::view").typed<Tensor(const Tensor&, IntArrayRef)>();
  return op.call(self, sizes);
}
Tensor reshape(const Tensor& self, IntArrayRef sizes) {
  static const auto op = find_op("strata::reshape").typed<Tensor(const Tensor&, IntArrayRef)>();
  return op.call(self, sizes);
}
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  static const auto op = find_op("strata::transpose.int").typed<Tensor(const Tensor&, int64_t, int64_t)>();
  return op.call(self, dim0, dim1);
}
Tensor permute(const Tensor& self, IntArrayRef dims) {
  static const auto op = find_op("strata::permute").typed<Tensor(const Tensor&, IntArrayRef)>();
  return op.call(self, dims);
}
Tensor expand(const Tensor& self, IntArrayRef sizes) {
  static const auto op = find_op("strata::expand").typed<Tensor(const Tensor&, IntArrayRef, bool)>();
  return op.call(self, sizes, false);
}
Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  static const auto op = find_op("strata::flatten.using_ints").typed<Tensor(const Tensor&, int64_t, int64_t)>();
  return op.call(self, start_dim, end_dim);
}
Tensor squeeze(const Tensor& self) {
  static const auto op = find_op("strata::squeeze").typed<Tensor(const Tensor&)>();
  return op.call(self);
}
Tensor squeeze(const Tensor& self, int64_t dim) {
  static const auto op = find_op("strata::squeeze.dim").typed<Tensor(const Tensor&, int64_t)>();
  return op.call(self, dim);
}
Tensor unsqueeze(const Tensor& self, int64_t dim) {
  static const auto op = find_op("strata::unsqueeze").typed<Tensor(const Tensor&, int64_t)>();
  return op.call(self, dim);
}
tensor_list split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  static const auto op = find_op("strata::split_with_sizes").typed<tensor_list(const Tensor&, IntArrayRef, int64_t)>();
  return op.call(self, split_sizes, dim);
}
tensor_list split(const Tensor& self, int64_t split_size, int64_t dim) {
  static const auto op = find_op("strata::split.Tensor").typed<tensor_list(const Tensor&, int64_t, int64_t)>();
  return op.call(self, split_size, dim);
}
tensor_list chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  static const auto op = find_op("strata::chunk").typed<tensor_list(const Tensor&, int64_t, int64_t)>();
  return op.call(self, chunks, dim);
}
Tensor cat(const tensor_list& tensors, int64_t dim) {
  static const auto op = find_op("strata::cat").typed<Tensor(const tensor_list&, int64_t)>();
  return op.call(tensors, dim);
}
const Tensor& cat_out(const Tensor& out, const tensor_list& tensors, int64_t dim) {
  static const auto op = find_op("strata::cat.out").typed<Tensor(const tensor_list&, int64_t, const Tensor&)>();
  op.call(tensors, dim, out);
  return out;
}
Tensor stack(const tensor_list& tensors, int64_t dim) {
  static const auto op = find_op("strata::stack").typed<Tensor(const tensor_list&, int64_t)>();
  return op.call(tensors, dim);
}

// Like Tensor::contiguous in PyTorch: a tensor already in the format returns itself without
// dispatching.
Tensor contiguous(const Tensor& self, MemoryFormat memory_format) {
  if (memory_format == MemoryFormat::Contiguous && self.is_contiguous()) return self;
  static const auto op = find_op("strata::contiguous").typed<Tensor(const Tensor&, MemoryFormat)>();
  return op.call(self, memory_format);
}
Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  static const auto op = find_op("strata::clone").typed<Tensor(const Tensor&, std::optional<MemoryFormat>)>();
  return op.call(self, memory_format);
}
const Tensor& copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  static const auto op = find_op("strata::copy_").typed<Tensor(const Tensor&, const Tensor&, bool)>();
  op.call(self, src, non_blocking);
  return self;
}

// Returns self when nothing changes (dtype, device, pinning, and the strides when a memory
// format is named) and no copy is asked for, as LibTorch's to() does.
Tensor to(const Tensor& self, const TensorOptions& options, bool non_blocking, bool copy,
          std::optional<MemoryFormat> memory_format) {
  STRATA_CHECK(!options.requires_grad(),
               "[to] to(options) doesn't support converting to a different requires_grad; "
               "call requires_grad_() on the result");
  STRATA_CHECK_VALUE(!(options.has_memory_format() && memory_format),
                     "[to] memory_format is set both in the options and as an argument");
  const std::optional<ScalarType> dtype = options.dtype_opt();
  const std::optional<Device> device = options.device_opt();
  const std::optional<MemoryFormat> format = memory_format ? memory_format : options.memory_format_opt();
  detail::check_strided(options.layout(), "to");
  const bool same_dtype = !dtype || *dtype == self.dtype();
  const bool same_device = !device || *device == self.device();
  const bool same_pinning = !options.pinned_memory() || self.is_pinned();
  const bool same_format = !format || *format == MemoryFormat::Preserve || self.is_contiguous(*format);
  if (same_dtype && same_device && same_pinning && same_format && !copy) return self;
  return to_copy_op().call(self, dtype, options.layout_opt(), device, options.pinned_memory_opt(), non_blocking,
                           format);
}

}  // namespace strata
