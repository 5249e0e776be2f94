// as_strided: a view of a tensor's storage with any geometry, and its derivative. Autograd
// uses it to regenerate a view's history from its base (autograd/view.cpp).
#include <strata/autograd/function.h>
#include <strata/autograd/view.h>
#include <strata/dispatch/library.h>
#include <strata/ops/ops.h>

namespace strata {
namespace {

// Metadata only, so one CompositeExplicitAutograd kernel serves every backend; make_view
// checks that the geometry stays inside the storage.
Tensor as_strided_kernel(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                         std::optional<int64_t> storage_offset) {
  STRATA_CHECK_VALUE(size.size() == stride.size(), "[as_strided] got ", size.size(), " sizes ", size, " but ",
                     stride.size(), " strides ", stride);
  for (int64_t s : size) STRATA_CHECK_VALUE(s >= 0, "[as_strided] sizes must be non-negative, got ", size);
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  STRATA_CHECK_VALUE(offset >= 0, "[as_strided] storage_offset must be non-negative, got ", offset);
  return detail::make_view(self, size, stride, offset);
}

using autograd::AutogradContext;
using autograd::detail::ViewGeometry;

ViewGeometry geometry(const IValue& sizes, const IValue& strides, int64_t offset) {
  return {DimVector(IntArrayRef(sizes.to_int_list())), DimVector(IntArrayRef(strides.to_int_list())), offset};
}

// See autograd::detail::as_strided_backward: the gradient is scattered through the output's
// geometry and read back through the input's (an input that overlaps itself is not handled).
struct AsStridedFunction : autograd::Function<AsStridedFunction> {
  static constexpr std::string_view name() { return "AsStridedBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, IntArrayRef size, IntArrayRef stride,
                        std::optional<int64_t> storage_offset) {
    Tensor out = as_strided(self, size, stride, storage_offset);
    ctx->saved_data["in_sizes"] = self.sizes();
    ctx->saved_data["in_strides"] = self.strides();
    ctx->saved_data["in_offset"] = self.storage_offset();
    ctx->saved_data["out_offset"] = out.storage_offset();
    ctx->saved_data["out_sizes"] = size;
    ctx->saved_data["out_strides"] = stride;
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const autograd::SavedData& saved = ctx->saved_data;
    const ViewGeometry in = geometry(saved.at("in_sizes"), saved.at("in_strides"), saved.at("in_offset").to_int());
    const ViewGeometry out = geometry(saved.at("out_sizes"), saved.at("out_strides"), saved.at("out_offset").to_int());
    return autograd::detail::gradients_in(std::move(grads), autograd::detail::as_strided_backward(grads[0], in, out),
                                          Tensor(), Tensor(), Tensor());
  }
};

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)");
}
STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) { m.impl("as_strided", &as_strided_kernel); }
STRATA_LIBRARY_IMPL(strata, Autograd, m) { m.impl("as_strided", autograd::kernel<AsStridedFunction>()); }

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  static const auto op = find_op("strata::as_strided")
                             .typed<Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>)>();
  return op.call(self, size, stride, storage_offset);
}

}  // namespace strata
