// A custom-op library built as a .so by the test suite and loaded with load_library.
#include <strata/strata.h>

using namespace strata;

namespace {
Tensor triple_cpu(const Tensor& x) {
  Tensor out = detail::make_empty(x.sizes(), x.dtype(), kCPU);
  const float* in = x.data_ptr<float>();
  float* result = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) result[i] = 3 * in[i];
  return out;
}
Tensor triple_meta(const Tensor& x) { return detail::make_empty(x.sizes(), x.dtype(), kMeta); }
}  // namespace

STRATA_LIBRARY(plugin_ops, m) { m.def("triple(Tensor x) -> Tensor"); }
STRATA_LIBRARY_IMPL(plugin_ops, CPU, m) { m.impl("triple", triple_cpu); }
STRATA_LIBRARY_IMPL(plugin_ops, Meta, m) { m.impl("triple", triple_meta); }
