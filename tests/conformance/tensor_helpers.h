#pragma once
// Helpers shared by the ports of LibTorch's test/cpp/api/tensor.cpp (test_tensor_*.cpp).
//
// Spelling map: at::/torch:: -> strata::, t[i] -> t.select(0, i), _version() -> version(),
// AutoDefaultDtypeMode -> DefaultDtype (test_tensor_factories.cpp, over set_default_dtype),
// kLong/kInt/kDouble as in strata's aliases. strata has one tensor() factory with torch::tensor's
// rules (API.md), so the at::tensor tests expect torch::tensor's dtypes: `// differs:` marks each
// such place.
#include <strata/strata.h>

namespace strata::conformance {

// _CUDA tests report themselves skipped without a device (LibTorch skips them too).
inline const bool cuda_missing = !cuda::is_available();

}  // namespace strata::conformance
