// The out-of-line parts of the structured registration form (Note [Structured ops]).
#include <strata/ops/structured.h>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>

#include <mutex>
#include <set>

namespace strata::detail {

namespace {
struct DerivedMetaKernels {
  std::mutex mutex;
  std::set<std::string, std::less<>> names;
};
DerivedMetaKernels& derived_meta_kernels() {
  static DerivedMetaKernels* kernels = new DerivedMetaKernels;  // outlives static destructors
  return *kernels;
}
}  // namespace

void record_derived_meta(const std::string& qualified_name) {
  DerivedMetaKernels& kernels = derived_meta_kernels();
  std::lock_guard lock(kernels.mutex);
  kernels.names.insert(qualified_name);
}

bool has_derived_meta(const std::string& qualified_name) {
  DerivedMetaKernels& kernels = derived_meta_kernels();
  std::lock_guard lock(kernels.mutex);
  return kernels.names.count(qualified_name) != 0;
}

void check_in_place_result(const char* op, const Tensor& self, const TensorMeta& meta, SelfOverlap overlap) {
  STRATA_CHECK_VALUE(meta.sizes.ref() == self.sizes(), "[", op, "] output with shape ", self.sizes(),
                     " doesn't match the broadcast shape ", meta.sizes.ref());
  STRATA_CHECK(meta.device == self.device(), "[", op, "] expected all tensors on the same device, got ", self.device(),
               " and ", meta.device);
  check_can_cast(op, meta.dtype, self.dtype());
  if (overlap == SelfOverlap::refuse) check_no_internal_overlap(op, self);
}

// Note [Resizing out=]
// An out= tensor with no elements (the usual `auto out = empty({0})`) takes the result's
// sizes and fresh storage, keeping its dtype; one with elements must already have the
// result's sizes. (PyTorch also resizes a non-empty out of the wrong shape, with a deprecation
// warning; here that is an error, since it silently drops the caller's views of `out`.)
void prepare_out(const char* op, const Tensor& out, const TensorMeta& meta) {
  STRATA_CHECK(meta.device == out.device(), "[", op, "] expected out on ", meta.device, " like the inputs, got ",
               out.device());
  check_can_cast(op, meta.dtype, out.dtype());
  if (out.sizes() != meta.sizes.ref()) {
    STRATA_CHECK_VALUE(out.numel() == 0, "[", op, "] out has shape ", out.sizes(), " but the result has shape ",
                       meta.sizes.ref(), "; pass an out of that shape or an empty one (e.g. empty({0}))");
    TensorMeta resized = meta;
    resized.dtype = out.dtype();
    const Tensor fresh = empty_from_meta(resized);
    out.impl()->set_data_from(*fresh.impl());
  }
  check_no_internal_overlap(op, out);
}

void out_variant_autograd(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  if (is_grad_enabled()) {
    const size_t arguments = op.schema().arguments.size();
    const auto check = [&](const Tensor& t) {
      STRATA_CHECK(!autograd::detail::requires_grad(t), "[", op.name(),
                   "] functions with out=... arguments don't support automatic differentiation, but one of the "
                   "arguments requires grad; call the functional form, or run under NoGradGuard");
    };
    for (size_t i = stack.size() - arguments; i < stack.size(); ++i) {
      if (stack[i].is_tensor()) check(stack[i].to_tensor());
      else if (stack[i].is_tensor_list())  // cat.out's inputs
        for (const Tensor& t : stack[i].to_tensor_list()) check(t);
    }
  }
  ExcludeDispatchKeyGuard below_autograd(DispatchKey::Autograd);
  op.redispatch_boxed(keys & DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::Autograd), stack);
}

}  // namespace strata::detail
